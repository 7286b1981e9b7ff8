//! Whole-system enquiry: is there a driver, which devices, which driver version.

use std::fmt;

use super::device::{init, Device, DeviceAttribute};
use crate::backend::backend;
use crate::error::Result;

/// The lowest compute capability cudajit supports (its kernels' PTX needs at least this).
pub const MIN_COMPUTE_CAPABILITY: (u32, u32) = (5, 0);

/// Number of CUDA devices visible to this process.
pub fn device_count() -> Result<usize> {
    init()?;
    let n = backend().device_count()?;
    Ok(n.max(0) as usize)
}

/// Every visible device, in ordinal order.
pub fn devices() -> Result<Vec<Device>> {
    (0..device_count()?).map(Device::get).collect()
}

/// Whether the driver loads, initialises, and sees at least one device.
pub fn is_available() -> bool {
    device_count().is_ok_and(|n| n > 0)
}

/// The CUDA version the installed driver supports (e.g. 13.0 for driver 580).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DriverVersion {
    /// Major version (e.g. 13).
    pub major: u32,
    /// Minor version (e.g. 0).
    pub minor: u32,
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The CUDA version the installed driver supports (`cuDriverGetVersion`).
pub fn driver_version() -> Result<DriverVersion> {
    let v = backend().driver_version()?;
    Ok(DriverVersion {
        major: (v / 1000) as u32,
        minor: ((v % 1000) / 10) as u32,
    })
}

/// Prints a summary of every device (as numba's `cuda.detect()` does) and returns whether any
/// is supported. Errors (no driver, no device) are printed too, and give `false`.
pub fn detect() -> bool {
    match detect_report() {
        Ok((text, any)) => {
            print!("{text}");
            any
        }
        Err(e) => {
            println!("CUDA driver not usable: {e}");
            false
        }
    }
}

/// The text [`detect`] prints, and whether any device is supported.
pub fn detect_report() -> Result<(String, bool)> {
    use std::fmt::Write;
    let devs = devices()?;
    let mut out = String::new();
    if crate::backend::on_simulator() {
        let _ = writeln!(
            out,
            "Running on the cudajit simulator (CUDAJIT_SIMULATOR=1): kernels execute on the CPU, \
             no GPU or driver is used"
        );
    }
    let _ = writeln!(out, "Found {} CUDA devices", devs.len());
    let mut supported = 0;
    for d in &devs {
        let cc = d.compute_capability()?;
        let ok = cc >= MIN_COMPUTE_CAPABILITY;
        supported += ok as usize;
        let tag = if ok {
            "[SUPPORTED]"
        } else {
            "[NOT SUPPORTED: compute capability too low]"
        };
        let _ = writeln!(
            out,
            "id {:<4} {:<50} {tag}",
            d.ordinal(),
            format!("{:?}", d.name()?)
        );
        let pci_device = d.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?;
        let pci_bus = d.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
        let watchdog = d.attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT)?;
        let ratio = d.attribute(
            DeviceAttribute::CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO,
        )?;
        let rows = [
            ("Compute Capability", format!("{}.{}", cc.0, cc.1)),
            ("PCI Device ID", pci_device.to_string()),
            ("PCI Bus ID", pci_bus.to_string()),
            ("UUID", d.uuid()?),
            (
                "Watchdog",
                if watchdog != 0 { "Enabled" } else { "Disabled" }.to_string(),
            ),
            ("FP32/FP64 Performance Ratio", ratio.to_string()),
        ];
        for (k, v) in rows {
            let _ = writeln!(out, "{k:>40}: {v}");
        }
    }
    let _ = writeln!(
        out,
        "Summary:\n\t{supported}/{} devices are supported",
        devs.len()
    );
    Ok((out, supported > 0))
}
