//! The driver backend's IPC calls: memory and event handles (`cuIpc*`), exportable memory pools
//! and their allocations (`cuMemPoolExport*` / `cuMemPoolImport*`).

use std::ffi::c_void;

use cudajit_sys as sys;

use super::CudaDriver;
use crate::backend::IpcApi;
use crate::error::{check, Result};

/// The handle's 64 bytes as plain bytes (`c_char` is signed on some targets).
fn to_bytes(reserved: &[std::os::raw::c_char; 64]) -> [u8; 64] {
    reserved.map(|c| c as u8)
}

/// Plain bytes back into a handle's `reserved` field.
fn to_chars(bytes: &[u8; 64]) -> [std::os::raw::c_char; 64] {
    bytes.map(|b| b as std::os::raw::c_char)
}

impl IpcApi for CudaDriver {
    unsafe fn ipc_get_mem_handle(&self, ptr: sys::CUdeviceptr) -> Result<[u8; 64]> {
        let mut h = sys::CUipcMemHandle::default();
        // SAFETY: a valid out-pointer; the caller passes a live allocation of the bound context.
        unsafe { drv!(cuIpcGetMemHandle(&mut h, ptr)) }?;
        Ok(to_bytes(&h.reserved))
    }

    fn ipc_open_mem_handle(&self, handle: &[u8; 64]) -> Result<sys::CUdeviceptr> {
        let h = sys::CUipcMemHandle {
            reserved: to_chars(handle),
        };
        let lazy = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS.0;
        let mut p = 0;
        // SAFETY: a valid out-pointer; the handle is passed by value and only read by the
        // driver, which checks it (a stale or corrupt handle is an error code, not a fault).
        unsafe { drv!(cuIpcOpenMemHandle_v2(&mut p, h, lazy)) }?;
        Ok(p)
    }

    unsafe fn ipc_close_mem_handle(&self, base: sys::CUdeviceptr) -> Result<()> {
        // SAFETY: the caller closes a mapping it opened, once.
        unsafe { drv!(cuIpcCloseMemHandle(base)) }
    }

    unsafe fn ipc_get_event_handle(&self, e: sys::CUevent) -> Result<[u8; 64]> {
        let mut h = sys::CUipcEventHandle::default();
        // SAFETY: a valid out-pointer; the caller passes a live interprocess event.
        unsafe { drv!(cuIpcGetEventHandle(&mut h, e)) }?;
        Ok(to_bytes(&h.reserved))
    }

    fn ipc_open_event_handle(&self, handle: &[u8; 64]) -> Result<sys::CUevent> {
        let h = sys::CUipcEventHandle {
            reserved: to_chars(handle),
        };
        let mut e = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the handle is passed by value and checked by the driver.
        unsafe { drv!(cuIpcOpenEventHandle(&mut e, h)) }?;
        Ok(e)
    }

    fn mem_pool_create_exportable(&self, dev: sys::CUdevice) -> Result<sys::CUmemoryPool> {
        let props = sys::CUmemPoolProps {
            allocType: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: dev,
            },
            ..Default::default()
        };
        let mut pool = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the properties are read during the call.
        unsafe { drv!(cuMemPoolCreate(&mut pool, &props)) }?;
        Ok(pool)
    }

    unsafe fn mem_pool_destroy(&self, pool: sys::CUmemoryPool) -> Result<()> {
        // SAFETY: the caller destroys a pool it created or imported, once (the driver releases
        // it when its last allocation is freed).
        unsafe { drv!(cuMemPoolDestroy(pool)) }
    }

    unsafe fn mem_alloc_from_pool(
        &self,
        bytes: usize,
        pool: sys::CUmemoryPool,
        stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr> {
        let mut p = 0;
        // SAFETY: a valid out-pointer; the caller passes a live pool and stream.
        unsafe { drv!(cuMemAllocFromPoolAsync(&mut p, bytes, pool, stream)) }?;
        Ok(p)
    }

    unsafe fn mem_pool_export_fd(&self, pool: sys::CUmemoryPool) -> Result<i32> {
        let mut fd: i32 = -1;
        let posix = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        // SAFETY: for a POSIX file descriptor the driver writes an `int` through the pointer;
        // the caller passes a live pool.
        unsafe {
            drv!(cuMemPoolExportToShareableHandle(
                (&mut fd as *mut i32).cast::<c_void>(),
                pool,
                posix,
                0
            ))
        }?;
        Ok(fd)
    }

    fn mem_pool_import_fd(&self, fd: i32) -> Result<sys::CUmemoryPool> {
        let mut pool = std::ptr::null_mut();
        let posix = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        // SAFETY: a valid out-pointer; a POSIX file descriptor is passed as the pointer's value
        // (the driver's convention), never dereferenced; a wrong descriptor is an error code.
        unsafe {
            drv!(cuMemPoolImportFromShareableHandle(
                &mut pool,
                fd as isize as *mut c_void,
                posix,
                0
            ))
        }?;
        Ok(pool)
    }

    unsafe fn mem_pool_export_pointer(&self, ptr: sys::CUdeviceptr) -> Result<[u8; 64]> {
        let mut data = sys::CUmemPoolPtrExportData::default();
        // SAFETY: a valid out-pointer; the caller passes a live pool allocation.
        unsafe { drv!(cuMemPoolExportPointer(&mut data, ptr)) }?;
        Ok(data.reserved)
    }

    unsafe fn mem_pool_import_pointer(
        &self,
        pool: sys::CUmemoryPool,
        data: &[u8; 64],
    ) -> Result<sys::CUdeviceptr> {
        let mut d = sys::CUmemPoolPtrExportData { reserved: *data };
        let mut p = 0;
        // SAFETY: valid pointers to locals; the caller passes a live imported pool.
        unsafe { drv!(cuMemPoolImportPointer(&mut p, pool, &mut d)) }?;
        Ok(p)
    }

    unsafe fn mem_pool_can_access(
        &self,
        pool: sys::CUmemoryPool,
        dev: sys::CUdevice,
    ) -> Result<bool> {
        let mut flags = sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        let mut loc = sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: dev,
        };
        // SAFETY: valid pointers to locals; the caller passes a live pool.
        unsafe { drv!(cuMemPoolGetAccess(&mut flags, pool, &mut loc)) }?;
        Ok(flags == sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    }

    unsafe fn mem_address_range(&self, ptr: sys::CUdeviceptr) -> Result<(sys::CUdeviceptr, usize)> {
        let (mut base, mut size) = (0, 0);
        // SAFETY: valid out-pointers; the caller passes an address in a live allocation.
        unsafe { drv!(cuMemGetAddressRange_v2(&mut base, &mut size, ptr)) }?;
        Ok((base, size))
    }
}
