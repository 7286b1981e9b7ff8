//! Peer access between devices: whether one device can read and write another's memory
//! directly, and turning that on.

use cudajit_sys as sys;

use super::device::Device;
use super::primary::Context;
use crate::backend::backend;
use crate::error::{Error, Result};

impl Device {
    /// Whether this device can access `other`'s memory directly (`cuDeviceCanAccessPeer`:
    /// NVLink or PCIe peer-to-peer). `false` for the device itself: a device is not its own
    /// peer (it always reaches its own memory).
    pub fn can_access_peer(&self, other: &Device) -> Result<bool> {
        super::init()?;
        if self == other {
            return Ok(false);
        }
        backend().device_can_access_peer(self.raw(), other.raw())
    }
}

impl Context {
    /// Lets this context's device access memory of `peer`'s device directly
    /// (`cuCtxEnablePeerAccess`), for kernels that read or write the other device's arrays and
    /// for faster peer copies. One direction only: call it on both contexts for both.
    ///
    /// It also grants this device access to `peer`'s stream-ordered memory pool
    /// (`cuMemPoolSetAccess`): stream-ordered allocations
    /// ([`Stream::alloc_async`](crate::stream::Stream::alloc_async), the results and
    /// temporaries of the array operations and of sharded arrays) are pool memory, which
    /// context peer access does not reach. Without the grant a kernel touching such an
    /// array of the other device faults with an illegal address.
    ///
    /// Idempotent: enabling access that is already enabled succeeds. Errors, changing nothing,
    /// when `peer` is on the same device, or when the devices cannot be peers
    /// ([`Device::can_access_peer`] is `false`).
    pub fn enable_peer_access(&self, peer: &Context) -> Result<()> {
        let (me, other) = (self.device(), peer.device());
        if me == other {
            return Err(Error::usage(format!(
                "enable_peer_access: the peer is device {} itself; a device reaches its own memory \
                 without peer access (peers are two different devices)",
                me.ordinal()
            )));
        }
        if !me.can_access_peer(&other)? {
            return Err(Error::usage(format!(
                "enable_peer_access: device {} cannot access device {}'s memory directly (no NVLink or \
                 PCIe peer-to-peer between them; `nvidia-smi topo -p2p r` shows which pairs can). Copies \
                 between them still work, staged through the host",
                me.ordinal(),
                other.ordinal()
            )));
        }
        self.bind()?;
        // SAFETY: `peer` is a live, retained primary context of another device.
        match unsafe { backend().ctx_enable_peer_access(peer.raw()) } {
            Err(e)
                if e.driver_code().is_some_and(|c| {
                    c.0 == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                }) => {}
            other => other?,
        }
        let pool = backend().device_default_mem_pool(other.raw())?;
        // SAFETY: the default pool of a live device; `me` can access `other` (checked above),
        // and the grant is idempotent.
        unsafe { backend().mem_pool_grant_access(pool, me.raw()) }
    }
}
