//! The simulated devices: how many (`CUDAJIT_SIM_DEVICES`), their attributes and identities,
//! their primary contexts, memory pools, context limits and peer access.
//!
//! Every device is the same (the host's cores and memory); each has its own primary context
//! handle, memory accounting, default memory pool and limits. All pairs of distinct devices
//! can be peers (as on an NVLink machine); a kernel reaches another device's memory only once
//! its context enabled peer access to that device (checked at launch, `launch.rs`).

use std::cell::Cell;

use cudajit_sys as sys;
use parking_lot::Mutex;

use super::{bad_handle, err, invalid, Simulator};
use crate::error::{Error, Result};

/// The most devices the simulator simulates.
pub(crate) const MAX_DEVICES: usize = 8;

/// Device 0's name; device `i > 0` is named `"cudajit simulator i"`.
pub(crate) const DEVICE_NAME: &str = "cudajit simulator";

/// Device 0's primary context handle (an opaque value nothing dereferences); device `i`'s is
/// `CTX + i * HANDLE_STEP`.
const CTX: usize = 0x5157_c0de;

/// Device 0's default memory pool handle; device `i`'s is `POOL + i * HANDLE_STEP`.
const POOL: usize = 0x5157_9001;

/// The spacing of per-device handle values.
const HANDLE_STEP: usize = 0x1000;

thread_local! {
    /// The calling thread's current context handle (0: none).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// The number of devices `CUDAJIT_SIM_DEVICES` asks for: 1 when unset or empty, else an integer in
/// `1..=MAX_DEVICES`; any other value is an error (reported by `init`, so the first cudajit
/// call fails and says why).
pub(super) fn devices_from_env() -> std::result::Result<usize, String> {
    parse_devices(std::env::var("CUDAJIT_SIM_DEVICES").ok().as_deref())
}

/// The device count a `CUDAJIT_SIM_DEVICES` value (`None`: unset) asks for.
fn parse_devices(v: Option<&str>) -> std::result::Result<usize, String> {
    let Some(v) = v.filter(|v| !v.trim().is_empty()) else {
        return Ok(1);
    };
    match v.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_DEVICES).contains(&n) => Ok(n),
        _ => Err(format!(
            "CUDAJIT_SIM_DEVICES={v:?}: the simulator simulates 1 to {MAX_DEVICES} devices; set \
             it to a number in that range (or unset it for one device)"
        )),
    }
}

/// A device's default memory pool: what stream-ordered allocations hold (the simulator keeps
/// nothing cached, so reserved equals used).
#[derive(Default)]
pub(super) struct PoolState {
    /// Live stream-ordered allocations: address -> bytes.
    pub live: std::collections::HashMap<u64, u64>,
    /// Bytes held now, the high-water mark, and the release threshold (only reported back).
    pub used: u64,
    pub high: u64,
    pub threshold: u64,
    /// Bit `j`: kernels on device `j` may access this pool's allocations
    /// (`cuMemPoolSetAccess`; peer access enabled on a context does not reach pool memory).
    pub access: u8,
}

/// What the simulator keeps per device.
#[derive(Default)]
pub(super) struct DeviceState {
    /// Retains of its primary context.
    retained: u32,
    /// Its default memory pool.
    pub pool: PoolState,
    /// Context limits set (`cuCtxSetLimit`): (limit, value), kept only to report them back.
    limits: Vec<(u32, usize)>,
    /// Bit `j`: this device's context enabled peer access to device `j`.
    peers: u8,
}

/// Whether a device may access an allocation of another ([`Devices::reaches`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// It may.
    Yes,
    /// Not: a stream-ordered allocation whose pool has not granted the device access.
    NotPool,
    /// Not: the device's context has not enabled peer access to the owner.
    NotPeer,
}

/// The simulated devices.
pub(super) struct Devices {
    /// How many (1 to [`MAX_DEVICES`]).
    pub n: usize,
    /// Why `CUDAJIT_SIM_DEVICES` was refused, reported by `init`.
    pub bad_env: Option<String>,
    /// Each device's state, by ordinal.
    pub state: Mutex<Vec<DeviceState>>,
}

impl Devices {
    /// `n` devices (clamped to `1..=MAX_DEVICES`).
    pub(super) fn new(n: usize) -> Devices {
        let n = n.clamp(1, MAX_DEVICES);
        Devices {
            n,
            bad_env: None,
            state: Mutex::new((0..n).map(|_| DeviceState::default()).collect()),
        }
    }

    /// Device `dev`'s primary context handle.
    pub(super) fn ctx(dev: usize) -> usize {
        CTX + dev * HANDLE_STEP
    }

    /// The device whose primary context is `ctx`, if it is one.
    pub(super) fn ctx_device(&self, ctx: usize) -> Option<usize> {
        let off = ctx.checked_sub(CTX)?;
        (off % HANDLE_STEP == 0 && off / HANDLE_STEP < self.n).then_some(off / HANDLE_STEP)
    }

    /// The device whose default memory pool is `pool`, if it is one.
    fn pool_device(&self, pool: usize) -> Option<usize> {
        let off = pool.checked_sub(POOL)?;
        (off % HANDLE_STEP == 0 && off / HANDLE_STEP < self.n).then_some(off / HANDLE_STEP)
    }

    /// Whether device `dev` may access the allocation at `start` of device `owner`: its own;
    /// a peer's stream-ordered allocation once the peer's pool granted `dev` access; a peer's
    /// other memory once `dev`'s context enabled peer access to it.
    pub(super) fn reaches(&self, dev: usize, owner: usize, start: u64) -> Reach {
        if dev == owner {
            return Reach::Yes;
        }
        let st = self.state.lock();
        if st[owner].pool.live.contains_key(&start) {
            if st[owner].pool.access & (1 << dev) != 0 {
                Reach::Yes
            } else {
                Reach::NotPool
            }
        } else if st[dev].peers & (1 << owner) != 0 {
            Reach::Yes
        } else {
            Reach::NotPeer
        }
    }
}

/// Device attribute `attr` (the same for every device); `workers` host threads are the
/// multiprocessors.
pub(super) fn attribute(attr: sys::CUdevice_attribute, workers: usize) -> i32 {
    use sys::CUdevice_attribute as A;
    let (major, minor) = crate::ir::default_cc();
    let table: &[(A, i32)] = &[
        (A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024),
        (A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024),
        (A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024),
        (A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64),
        (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, i32::MAX),
        (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535),
        (A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535),
        (
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            super::SHARED_PER_BLOCK,
        ),
        (
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            super::SHARED_OPTIN,
        ),
        (
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            228 * 1024,
        ),
        (A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 * 1024),
        (A::CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32),
        (A::CU_DEVICE_ATTRIBUTE_MAX_PITCH, i32::MAX),
        (A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536),
        (
            A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            65536,
        ),
        (A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1_000_000),
        (A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 1_000_000),
        (A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 64),
        (A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 4 << 20),
        (A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, workers as i32),
        // It runs sm_90's thread-block clusters.
        (A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1),
        (A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048),
        (A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32),
        (
            A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            major as i32,
        ),
        (
            A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            minor as i32,
        ),
        (A::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1),
        (A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1),
        (A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1),
        (A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1),
        (A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 1),
        (A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1),
        (A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 1),
        (
            A::CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO,
            2,
        ),
        (A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1),
        (A::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1),
        // As an H100's: texture bases over device memory 512-byte aligned, pitches 32.
        (A::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512),
        (A::CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32),
    ];
    table
        .iter()
        .find(|(a, _)| *a == attr)
        .map_or(0, |&(_, v)| v)
}

/// The device, context, pool and peer calls (the `Backend` methods delegate here).
impl Simulator {
    /// `init`: refuses a bad `CUDAJIT_SIM_DEVICES`.
    pub(super) fn sim_init(&self) -> Result<()> {
        match &self.devices.bad_env {
            Some(why) => Err(Error::usage(why.clone())),
            None => Ok(()),
        }
    }

    /// Checks that `dev` is a device ordinal; it as an index.
    pub(super) fn check_device(&self, dev: sys::CUdevice, call: &'static str) -> Result<usize> {
        match usize::try_from(dev) {
            Ok(d) if d < self.devices.n => Ok(d),
            _ => Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_DEVICE)),
        }
    }

    /// The device of the calling thread's current context (device 0 when none is current: the
    /// simulator's calls made without a context act on device 0, as they did with one device).
    pub(super) fn current_device(&self) -> usize {
        self.devices.ctx_device(CURRENT.get()).unwrap_or(0)
    }

    /// The device of context `ctx`, or `CUDA_ERROR_INVALID_CONTEXT`.
    pub(super) fn ctx_device(&self, ctx: sys::CUcontext, call: &'static str) -> Result<usize> {
        self.devices
            .ctx_device(ctx as usize)
            .ok_or_else(|| err(call, sys::CUresult::CUDA_ERROR_INVALID_CONTEXT))
    }

    pub(super) fn sim_device_name(&self, dev: sys::CUdevice) -> Result<String> {
        Ok(match self.check_device(dev, "cuDeviceGetName")? {
            0 => DEVICE_NAME.to_string(),
            d => format!("{DEVICE_NAME} {d}"),
        })
    }

    pub(super) fn sim_device_uuid(&self, dev: sys::CUdevice) -> Result<[u8; 16]> {
        let d = self.check_device(dev, "cuDeviceGetUuid_v2")?;
        let mut uuid = *b"cudajit-simulatr";
        if d > 0 {
            uuid[15] = b'0' + d as u8;
        }
        Ok(uuid)
    }

    pub(super) fn sim_device_pci_bus_id(&self, dev: sys::CUdevice) -> Result<String> {
        let d = self.check_device(dev, "cuDeviceGetPCIBusId")?;
        Ok(format!("0000:{d:02x}:00.0"))
    }

    pub(super) fn sim_primary_ctx_retain(&self, dev: sys::CUdevice) -> Result<sys::CUcontext> {
        let d = self.check_device(dev, "cuDevicePrimaryCtxRetain")?;
        self.devices.state.lock()[d].retained += 1;
        Ok(Devices::ctx(d) as sys::CUcontext)
    }

    pub(super) fn sim_primary_ctx_release(&self, dev: sys::CUdevice) -> Result<()> {
        let d = self.check_device(dev, "cuDevicePrimaryCtxRelease_v2")?;
        let mut st = self.devices.state.lock();
        st[d].retained = st[d].retained.saturating_sub(1);
        Ok(())
    }

    /// A reset destroys the context: its peer mappings, both ways, go with it.
    pub(super) fn sim_primary_ctx_reset(&self, dev: sys::CUdevice) -> Result<()> {
        let d = self.check_device(dev, "cuDevicePrimaryCtxReset_v2")?;
        let mut st = self.devices.state.lock();
        st[d].peers = 0;
        for s in st.iter_mut() {
            s.peers &= !(1 << d);
        }
        Ok(())
    }

    pub(super) fn sim_ctx_get_current(&self) -> sys::CUcontext {
        CURRENT.get() as sys::CUcontext
    }

    pub(super) fn sim_ctx_set_current(&self, ctx: sys::CUcontext) -> Result<()> {
        if ctx.is_null() || self.devices.ctx_device(ctx as usize).is_some() {
            CURRENT.set(ctx as usize);
            Ok(())
        } else {
            Err(err(
                "cuCtxSetCurrent",
                sys::CUresult::CUDA_ERROR_INVALID_CONTEXT,
            ))
        }
    }

    pub(super) fn sim_ctx_get_device(&self) -> Result<sys::CUdevice> {
        match self.devices.ctx_device(CURRENT.get()) {
            Some(d) => Ok(d as sys::CUdevice),
            None => Err(err(
                "cuCtxGetDevice",
                sys::CUresult::CUDA_ERROR_INVALID_CONTEXT,
            )),
        }
    }

    pub(super) fn sim_ctx_set_limit(&self, limit: sys::CUlimit, value: usize) {
        let d = self.current_device();
        let limits = &mut self.devices.state.lock()[d].limits;
        match limits.iter_mut().find(|(l, _)| *l == limit.0) {
            Some(slot) => slot.1 = value,
            None => limits.push((limit.0, value)),
        }
    }

    pub(super) fn sim_ctx_get_limit(&self, limit: sys::CUlimit) -> usize {
        let d = self.current_device();
        let set = self.devices.state.lock()[d]
            .limits
            .iter()
            .find(|(l, _)| *l == limit.0)
            .map(|(_, v)| *v);
        // The driver's defaults: 1 KiB of stack per thread, 1 MiB of printf FIFO, 8 MiB of heap.
        set.unwrap_or(match limit {
            sys::CUlimit::CU_LIMIT_STACK_SIZE => 1024,
            sys::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE => 1 << 20,
            sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE => 8 << 20,
            _ => 0,
        })
    }

    pub(super) fn sim_device_default_mem_pool(
        &self,
        dev: sys::CUdevice,
    ) -> Result<sys::CUmemoryPool> {
        let d = self.check_device(dev, "cuDeviceGetDefaultMemPool")?;
        Ok((POOL + d * HANDLE_STEP) as sys::CUmemoryPool)
    }

    /// Runs `with` on the state of memory pool `pool`, or fails with `call`'s
    /// `CUDA_ERROR_INVALID_HANDLE`.
    pub(super) fn pool<R>(
        &self,
        pool: sys::CUmemoryPool,
        call: &'static str,
        with: impl FnOnce(&mut PoolState) -> R,
    ) -> Result<R> {
        let d = self
            .devices
            .pool_device(pool as usize)
            .ok_or_else(|| bad_handle(call))?;
        Ok(with(&mut self.devices.state.lock()[d].pool))
    }

    pub(super) fn sim_mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64> {
        use sys::CUmemPool_attribute as A;
        let call = "cuMemPoolGetAttribute";
        self.pool(pool, call, |p| match attr {
            A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => Ok(p.threshold),
            A::CU_MEMPOOL_ATTR_USED_MEM_CURRENT | A::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT => {
                Ok(p.used)
            }
            A::CU_MEMPOOL_ATTR_USED_MEM_HIGH | A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH => Ok(p.high),
            _ => Err(invalid(call)),
        })?
    }

    pub(super) fn sim_set_mem_pool_attribute(
        &self,
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
        value: u64,
    ) -> Result<()> {
        use sys::CUmemPool_attribute as A;
        let call = "cuMemPoolSetAttribute";
        self.pool(pool, call, |p| {
            match attr {
                A::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD => p.threshold = value,
                A::CU_MEMPOOL_ATTR_USED_MEM_HIGH | A::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
                    if value == 0 =>
                {
                    p.high = p.used
                }
                _ => return Err(invalid(call)),
            }
            Ok(())
        })?
    }

    /// A stream-ordered allocation `p` of `bytes` on device `dev`'s pool.
    pub(super) fn pool_add(&self, dev: usize, p: u64, bytes: u64) {
        let pool = &mut self.devices.state.lock()[dev].pool;
        pool.live.insert(p, bytes);
        pool.used += bytes;
        pool.high = pool.high.max(pool.used);
    }

    /// Forgets `p` in whichever pool holds it (if one does).
    pub(super) fn pool_remove(&self, p: u64) {
        for d in self.devices.state.lock().iter_mut() {
            if let Some(bytes) = d.pool.live.remove(&p) {
                d.pool.used -= bytes;
                return;
            }
        }
    }

    /// As the driver's `cuMemPoolSetAccess` with one read-write descriptor for device `dev`
    /// (a no-op for the pool's own device).
    pub(super) fn sim_mem_pool_grant_access(
        &self,
        pool: sys::CUmemoryPool,
        dev: sys::CUdevice,
    ) -> Result<()> {
        let call = "cuMemPoolSetAccess";
        let d = self.check_device(dev, call)?;
        self.pool(pool, call, |p| p.access |= 1 << d)
    }

    pub(super) fn sim_device_can_access_peer(
        &self,
        dev: sys::CUdevice,
        peer: sys::CUdevice,
    ) -> Result<bool> {
        let a = self.check_device(dev, "cuDeviceCanAccessPeer")?;
        let b = self.check_device(peer, "cuDeviceCanAccessPeer")?;
        // Every pair of distinct devices (as on an NVLink machine); like the driver, a device
        // is not its own peer.
        Ok(a != b)
    }

    /// As the driver: `CUDA_ERROR_INVALID_CONTEXT` with no current context or a peer that is
    /// not a context, `CUDA_ERROR_INVALID_DEVICE` for the current context's own device,
    /// `CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED` the second time.
    pub(super) fn sim_ctx_enable_peer_access(&self, peer: sys::CUcontext) -> Result<()> {
        let call = "cuCtxEnablePeerAccess";
        let me = self.devices.ctx_device(CURRENT.get());
        let other = self.devices.ctx_device(peer as usize);
        let (Some(me), Some(other)) = (me, other) else {
            return Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        };
        if me == other {
            return Err(err(call, sys::CUresult::CUDA_ERROR_INVALID_DEVICE));
        }
        let mut st = self.devices.state.lock();
        if st[me].peers & (1 << other) != 0 {
            return Err(err(
                call,
                sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
            ));
        }
        st[me].peers |= 1 << other;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
