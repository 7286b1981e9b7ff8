//! Kernel functions on the simulator: their attributes, occupancy, and the check of a
//! launch's array arguments against the simulator's memory and the devices' peer access.

use cudajit_sys as sys;

use super::devices::Reach;
use super::launch::Launch;
use super::memory::Kind;
use super::{bad_handle, invalid, FuncState, Simulator, SHARED_OPTIN};
use crate::error::{Error, Result};
use crate::ir::FunctionIr;

/// Static shared memory of a kernel and the device functions it calls, bytes (at most the
/// device's limit once loaded: see `backend::limits`).
pub(super) fn static_shared(f: &FunctionIr) -> usize {
    crate::backend::limits::static_shared_bytes(f).min(i32::MAX as u64) as usize
}

/// Local memory per thread, bytes.
fn local_bytes(f: &FunctionIr) -> usize {
    let own: usize = f
        .locals
        .iter()
        .map(|s| s.len as usize * s.elem.size())
        .sum();
    own + f.callees.iter().map(|c| local_bytes(c)).max().unwrap_or(0)
}

/// Most threads per block a kernel may be launched with.
pub(super) fn max_threads(f: &FunctionIr) -> i32 {
    f.launch_bounds
        .map_or(1024, |(t, _)| t.clamp(1, 1024) as i32)
}

/// The function calls (the `Backend` methods delegate here).
impl Simulator {
    /// Runs `with` on function `f`'s state, or fails with `call`'s `CUDA_ERROR_INVALID_HANDLE`.
    pub(super) fn func<R>(
        &self,
        f: sys::CUfunction,
        call: &'static str,
        with: impl FnOnce(&mut FuncState) -> R,
    ) -> Result<R> {
        let mut h = self.handles.lock();
        let st = h
            .functions
            .get_mut(&(f as usize))
            .ok_or_else(|| bad_handle(call))?;
        Ok(with(st))
    }

    pub(super) fn sim_func_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
    ) -> Result<i32> {
        use sys::CUfunction_attribute as A;
        let (major, minor) = crate::ir::default_cc();
        self.func(f, "cuFuncGetAttribute", |st| {
            if attr == A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK {
                max_threads(&st.ir)
            } else if attr == A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES {
                static_shared(&st.ir) as i32
            } else if attr == A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES {
                local_bytes(&st.ir) as i32
            } else if attr == A::CU_FUNC_ATTRIBUTE_NUM_REGS {
                32
            } else if attr == A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES {
                st.max_dynamic
            } else if attr == A::CU_FUNC_ATTRIBUTE_PTX_VERSION
                || attr == A::CU_FUNC_ATTRIBUTE_BINARY_VERSION
            {
                (major * 10 + minor) as i32
            } else {
                0
            }
        })
    }

    pub(super) fn sim_func_set_attribute(
        &self,
        f: sys::CUfunction,
        attr: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<()> {
        let call = "cuFuncSetAttribute";
        let dynamic =
            attr == sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        self.func(f, call, |st| {
            if !dynamic {
                return Ok(());
            }
            if value < 0 || value as i64 + static_shared(&st.ir) as i64 > SHARED_OPTIN as i64 {
                return Err(invalid(call));
            }
            st.max_dynamic = value;
            Ok(())
        })?
    }

    pub(super) fn sim_occupancy_max_potential_block_size(
        &self,
        f: sys::CUfunction,
        _dynamic_smem: usize,
        block_limit: i32,
    ) -> Result<(i32, i32)> {
        let limit = self.func(f, "cuOccupancyMaxPotentialBlockSize", |st| {
            max_threads(&st.ir)
        })?;
        let mut block = limit.min(1024);
        if block_limit > 0 {
            block = block.min(block_limit);
        }
        let per_sm = (2048 / block.max(1)).clamp(1, 32);
        Ok((per_sm * self.workers as i32, block))
    }

    pub(super) fn sim_occupancy_max_active_blocks(
        &self,
        f: sys::CUfunction,
        block: i32,
        dynamic_smem: usize,
    ) -> Result<i32> {
        let shared = self.func(f, "cuOccupancyMaxActiveBlocksPerMultiprocessor", |st| {
            static_shared(&st.ir)
        })? + dynamic_smem;
        let by_threads = 2048 / block.max(1);
        let by_shared = (228 * 1024usize)
            .checked_div(shared)
            .map_or(32, |b| b.min(32) as i32);
        Ok(by_threads.min(by_shared).clamp(0, 32))
    }

    /// Clusters that fit on the device at once: each multiprocessor holds the blocks the
    /// occupancy rule allows, and a cluster's blocks sit on multiprocessors of one GPC (18
    /// of them per GPC on an H100; here: the multiprocessors, in whole clusters). 0 for a
    /// cluster of more than 8 blocks (the portable limit).
    pub(super) fn sim_occupancy_max_active_clusters(
        &self,
        f: sys::CUfunction,
        block: [u32; 3],
        cluster: [u32; 3],
        shared_mem_bytes: u32,
    ) -> Result<i32> {
        let threads = block.iter().product::<u32>() as i32;
        let per_sm = self.sim_occupancy_max_active_blocks(f, threads, shared_mem_bytes as usize)?;
        let size = cluster.iter().product::<u32>() as i32;
        if size == 0 || size > 8 {
            return Ok(0);
        }
        let sms = self.workers as i32;
        Ok(per_sm * sms / size)
    }

    /// Checks that every array argument of launch `l` of `ir` on device `dev` is simulator
    /// memory covering its extents, and memory `dev` may reach.
    pub(super) fn check_arrays(&self, ir: &FunctionIr, l: &Launch<'_>, dev: usize) -> Result<()> {
        // Every array argument must be simulator memory covering its extents, of this device
        // or of a peer it enabled access to (the kernel touches global memory only through
        // its array arguments, so this is the one check, per launch, not per access).
        for (i, a) in l.arrays.iter().enumerate() {
            let Some(a) = a else { continue };
            let bytes = a.len.saturating_mul(a.elem.size() as u64);
            if bytes == 0 {
                continue;
            }
            let found = self.mem.lock().find(a.base, bytes);
            if let Some(owner) = found {
                let reach = if owner.kind == Kind::Device {
                    self.devices.reaches(dev, owner.dev, owner.start)
                } else {
                    Reach::Yes
                };
                let why = match reach {
                    Reach::Yes => None,
                    Reach::NotPeer => Some(format!(
                        "device {dev} has not enabled peer access to device {}",
                        owner.dev
                    )),
                    Reach::NotPool => Some(format!(
                        "it is a stream-ordered allocation of device {}'s memory pool, which \
                         has not granted device {dev} access (peer access on a context does \
                         not reach pool memory: cuMemPoolSetAccess does)",
                        owner.dev
                    )),
                };
                if let Some(why) = why {
                    return Err(Error::Fault {
                        kernel: ir.name.clone(),
                        kind: crate::error::FaultKind::PeerAccess,
                        message: format!(
                            "array parameter {i} ({} elements of {} at {:#x}) is memory of \
                             device {}, but the kernel runs on device {dev}, and {why}; call \
                             enable_peer_access on device {dev}'s context first (it also \
                             grants access to the peer's pool), or copy the array to device \
                             {dev}",
                            a.len,
                            a.elem.name(),
                            a.base,
                            owner.dev,
                        ),
                    });
                }
            } else {
                return Err(Error::Fault {
                    kernel: ir.name.clone(),
                    kind: crate::error::FaultKind::OutOfBounds,
                    message: format!(
                        "array parameter {i} ({} elements of {} at {:#x}) is not inside one \
                         allocation of the simulator's memory",
                        a.len,
                        a.elem.name(),
                        a.base
                    ),
                });
            }
        }
        // Every tensor map must be one the simulator encoded, over simulator memory.
        for (i, b) in l.maps.iter().enumerate() {
            let Some(b) = b else { continue };
            let fault = |kind, message: String| Error::Fault {
                kernel: ir.name.clone(),
                kind,
                message,
            };
            let Some(d) =
                super::tensor_map::decode(&crate::backend::tensor_map::TensorMapBytes(**b))
            else {
                return Err(fault(
                    crate::error::FaultKind::Unsupported,
                    format!(
                        "tensor-map parameter {i} holds bytes that are not a tensor map the                          simulator encoded (make it with TensorMap::tiled in this process)"
                    ),
                ));
            };
            let extent = (0..d.rank as usize)
                .map(|k| (d.global_dims[k] - 1) * d.global_strides[k])
                .sum::<u64>()
                + d.elem.size() as u64;
            if self.mem.lock().find(d.global_address, extent).is_none() {
                return Err(fault(
                    crate::error::FaultKind::OutOfBounds,
                    format!(
                        "tensor-map parameter {i} describes {extent} bytes at {:#x}, which are not                          inside one allocation of the simulator's memory (was the array freed?)",
                        d.global_address
                    ),
                ));
            }
        }
        Ok(())
    }
}
