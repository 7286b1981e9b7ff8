//! Device handles and their properties.

use std::fmt;
use std::sync::OnceLock;

use cudajit_sys as sys;

use crate::backend::backend;
use crate::error::{Error, Result};

/// A device attribute (`CU_DEVICE_ATTRIBUTE_*`), for [`Device::attribute`].
pub type DeviceAttribute = sys::CUdevice_attribute;

static INIT: OnceLock<Result<()>> = OnceLock::new();

/// Loads the driver and calls `cuInit` once per process.
pub(crate) fn init() -> Result<()> {
    INIT.get_or_init(|| backend().init(crate::context::release_at_exit))
        .clone()
}

/// One CUDA device (a GPU), by ordinal.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    ordinal: i32,
    raw: sys::CUdevice,
}

impl Device {
    /// The device with this ordinal (0-based, as `nvidia-smi` and `CUDA_VISIBLE_DEVICES` number them).
    pub fn get(ordinal: usize) -> Result<Device> {
        let count = super::device_count()?;
        if ordinal >= count {
            return Err(Error::usage(format!(
                "there is no CUDA device {ordinal}: this machine has {count} device(s)"
            )));
        }
        let ordinal = ordinal as i32;
        let raw = backend().device_get(ordinal)?;
        Ok(Device { ordinal, raw })
    }

    pub(crate) fn from_raw(raw: sys::CUdevice) -> Device {
        Device { ordinal: raw, raw }
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    /// The driver's handle.
    pub fn raw(&self) -> sys::CUdevice {
        self.raw
    }

    /// The product name (e.g. `NVIDIA H100 80GB HBM3`).
    pub fn name(&self) -> Result<String> {
        backend().device_name(self.raw)
    }

    /// The value of any `CU_DEVICE_ATTRIBUTE_*`.
    pub fn attribute(&self, attr: DeviceAttribute) -> Result<i32> {
        backend().device_attribute(self.raw, attr)
    }

    /// Every attribute `cuda.h` names, with its value; attributes this driver does not know are left out.
    pub fn attributes(&self) -> Vec<(&'static str, i32)> {
        sys::device_attributes()
            .filter_map(|(attr, name)| self.attribute(attr).ok().map(|v| (name, v)))
            .collect()
    }

    /// Compute capability as (major, minor), e.g. (9, 0).
    /// Read from the driver once per device and process (it cannot change).
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        /// Devices whose compute capability is remembered.
        const KEPT: usize = 64;
        static CC: [std::sync::OnceLock<(u32, u32)>; KEPT] =
            [const { std::sync::OnceLock::new() }; KEPT];
        if let Some(cc) = CC.get(self.ordinal()).and_then(std::sync::OnceLock::get) {
            return Ok(*cc);
        }
        let major =
            self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor =
            self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let cc = (major as u32, minor as u32);
        if let Some(slot) = CC.get(self.ordinal()) {
            let _ = slot.set(cc);
        }
        Ok(cc)
    }

    /// The device's UUID as the 16 raw bytes.
    pub fn uuid_bytes(&self) -> Result<[u8; 16]> {
        backend().device_uuid(self.raw)
    }

    /// The UUID as `nvidia-smi -L` prints it: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    pub fn uuid(&self) -> Result<String> {
        let b = self.uuid_bytes()?;
        let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
        Ok(format!(
            "GPU-{}-{}-{}-{}-{}",
            hex[0..4].concat(),
            hex[4..6].concat(),
            hex[6..8].concat(),
            hex[8..10].concat(),
            hex[10..16].concat()
        ))
    }

    /// The PCI bus id, `domain:bus:device.function` (e.g. `0000:19:00.0`).
    pub fn pci_bus_id(&self) -> Result<String> {
        backend().device_pci_bus_id(self.raw)
    }

    /// Total device memory in bytes.
    pub fn total_memory(&self) -> Result<usize> {
        backend().device_total_mem(self.raw)
    }

    /// Number of streaming multiprocessors.
    pub fn multiprocessor_count(&self) -> Result<u32> {
        self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map(|v| v as u32)
    }

    /// Most threads one block may have.
    pub fn max_threads_per_block(&self) -> Result<u32> {
        self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
            .map(|v| v as u32)
    }

    /// Threads per warp (32 on every NVIDIA GPU so far).
    pub fn warp_size(&self) -> Result<u32> {
        self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)
            .map(|v| v as u32)
    }

    /// Static shared memory one block may use, in bytes.
    pub fn max_shared_memory_per_block(&self) -> Result<u32> {
        self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
            .map(|v| v as u32)
    }

    /// Shared memory one block may use when it opts in (dynamic shared memory), in bytes.
    pub fn max_shared_memory_per_block_optin(&self) -> Result<u32> {
        self.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map(|v| v as u32)
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.ordinal)
    }
}
