//! Devices, the driver's initialisation, and primary contexts.

mod current;
mod device;
mod enquiry;
mod peer;
mod primary;

pub use current::{current_context, current_device, CurrentGuard};
pub use device::{Device, DeviceAttribute};
pub use enquiry::{
    detect, detect_report, device_count, devices, driver_version, is_available, DriverVersion,
    MIN_COMPUTE_CAPABILITY,
};
pub use primary::Context;
pub(crate) use primary::{on_reset, release_at_exit};

pub(crate) use device::init;
