//! The simulator's memory: device, managed and pinned host allocations are all host memory,
//! 256-byte aligned, and a device pointer is the host address. Every allocation is recorded,
//! with the simulated device it belongs to, so that frees, pointer queries and kernel arguments
//! (including accesses to another device's memory) can be checked.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::ffi::c_void;

use cudajit_sys as sys;

use super::devices::MAX_DEVICES;
use super::{invalid, Simulator};
use crate::error::Result;

/// Alignment of every allocation (as `cuMemAlloc`'s).
const ALIGN: usize = 256;

/// What an allocation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Device,
    Managed,
    /// Pinned host memory (`cuMemHostAlloc`).
    Host,
}

/// A live allocation, as [`Memory::find`] returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Alloc {
    /// Its first byte's address, its size in bytes, and what it is.
    pub start: u64,
    pub size: usize,
    pub kind: Kind,
    /// The simulated device whose context made it (pinned host and managed memory are
    /// reachable from every device; device memory only from its own and its peers).
    pub dev: usize,
}

/// The live allocations, by address.
#[derive(Default)]
pub(super) struct Memory {
    live: BTreeMap<u64, (usize, Kind, u8)>,
    /// Bytes of device and managed memory in use, per device.
    pub used: [usize; MAX_DEVICES],
}

impl Memory {
    /// Live allocations: (device and managed, pinned host).
    pub(super) fn counts(&self) -> (usize, usize) {
        let host = self
            .live
            .values()
            .filter(|(_, k, _)| *k == Kind::Host)
            .count();
        (self.live.len() - host, host)
    }

    /// Allocates `bytes` (at least 1) zeroed bytes for device `dev` (below [`MAX_DEVICES`]);
    /// `None` when the host has no memory.
    pub(super) fn alloc(&mut self, bytes: usize, kind: Kind, dev: usize) -> Option<u64> {
        let dev = dev.min(MAX_DEVICES - 1);
        let layout = Layout::from_size_align(bytes.max(1), ALIGN).ok()?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc_zeroed(layout) };
        if p.is_null() {
            return None;
        }
        let addr = p as u64;
        self.live.insert(addr, (bytes.max(1), kind, dev as u8));
        if kind != Kind::Host {
            self.used[dev] += bytes;
        }
        Some(addr)
    }

    /// Frees an allocation made by [`Memory::alloc`]; `false` when `addr` is not one.
    pub(super) fn free(&mut self, addr: u64, kind: Option<Kind>) -> bool {
        match self.live.get(&addr) {
            Some(&(bytes, k, dev)) if kind_matches(kind, k) => {
                self.live.remove(&addr);
                if k != Kind::Host {
                    let used = &mut self.used[dev as usize];
                    *used = used.saturating_sub(bytes);
                }
                let layout = Layout::from_size_align(bytes, ALIGN).expect("a layout made before");
                // SAFETY: `addr` was returned by `alloc_zeroed` with this layout and is freed
                // once (it was just removed from the table).
                unsafe { dealloc(addr as *mut u8, layout) };
                true
            }
            _ => false,
        }
    }

    /// The allocation holding `[addr, addr + bytes)`, if one does.
    pub(super) fn find(&self, addr: u64, bytes: u64) -> Option<Alloc> {
        let (&start, &(size, kind, dev)) = self.live.range(..=addr).next_back()?;
        let end = start + size as u64;
        (addr.checked_add(bytes)? <= end).then_some(Alloc {
            start,
            size,
            kind,
            dev: dev as usize,
        })
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        let all: Vec<u64> = self.live.keys().copied().collect();
        for a in all {
            self.free(a, None);
        }
    }
}

/// Whether an allocation of kind `k` may be freed as `want` (`None`: any kind; device frees
/// also take managed memory, as `cuMemFree` does).
fn kind_matches(want: Option<Kind>, k: Kind) -> bool {
    want.map_or(true, |want| {
        want == k || (want == Kind::Device && k == Kind::Managed)
    })
}

/// The host's memory in bytes (the simulated device's total memory): `MemTotal` of
/// /proc/meminfo, else 16 GiB.
pub(super) fn host_memory() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(16 << 30)
}

/// The simulator's stream-ordered and managed memory calls, and pinned memory's device
/// pointers (the `Backend` methods delegate here).
impl Simulator {
    pub(super) unsafe fn sim_mem_alloc_async(
        &self,
        bytes: usize,
        stream: sys::CUstream,
    ) -> Result<sys::CUdeviceptr> {
        // From the default pool of the stream's device.
        let dev = self.stream_device(&self.handles.lock(), stream);
        let p = self.alloc(bytes, Kind::Device, dev, "cuMemAllocAsync")?;
        self.pool_add(dev, p, bytes as u64);
        Ok(p)
    }

    pub(super) unsafe fn sim_mem_free_async(
        &self,
        ptr: sys::CUdeviceptr,
        stream: sys::CUstream,
    ) -> Result<()> {
        if let Some((_, memory)) = self.graphs.lock().capturing.get_mut(&(stream as usize)) {
            // Freed with the graph (its launches use the memory).
            memory.push(ptr);
            return Ok(());
        }
        self.free(ptr, Some(Kind::Device), "cuMemFreeAsync")?;
        self.pool_remove(ptr);
        Ok(())
    }

    pub(super) unsafe fn sim_mem_prefetch(
        &self,
        ptr: sys::CUdeviceptr,
        bytes: usize,
        to_host: bool,
        dev: sys::CUdevice,
        _stream: sys::CUstream,
    ) -> Result<()> {
        if !to_host {
            self.check_device(dev, "cuMemPrefetchAsync_v2")?;
        }
        match self.mem.lock().find(ptr, bytes as u64) {
            Some(a) if a.kind == Kind::Managed => Ok(()),
            _ => Err(invalid("cuMemPrefetchAsync_v2")),
        }
    }

    pub(super) unsafe fn sim_host_device_pointer(
        &self,
        ptr: *mut c_void,
    ) -> Result<sys::CUdeviceptr> {
        match self.mem.lock().find(ptr as u64, 1) {
            Some(a) if a.kind == Kind::Host => Ok(ptr as u64),
            _ => Err(invalid("cuMemHostGetDevicePointer_v2")),
        }
    }
}
