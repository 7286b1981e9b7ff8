//! Names and descriptions of driver codes, usable with no driver loaded.

use crate::names_table::{DEVICE_ATTRIBUTES, RESULT_CODES};
use crate::types::{CUdevice_attribute, CUresult};

/// The constant's name of a result code (`CUDA_ERROR_OUT_OF_MEMORY`), if `cuda.h` knows it.
pub fn result_name(code: CUresult) -> Option<&'static str> {
    RESULT_CODES
        .iter()
        .find(|(v, _, _)| *v == code.0)
        .map(|(_, name, _)| *name)
}

/// The header's description of a result code, if `cuda.h` knows it.
pub fn result_description(code: CUresult) -> Option<&'static str> {
    RESULT_CODES
        .iter()
        .find(|(v, _, _)| *v == code.0)
        .map(|(_, _, text)| *text)
}

/// Every device attribute that `cuda.h` names, with its constant's name, in header order.
pub fn device_attributes() -> impl Iterator<Item = (CUdevice_attribute, &'static str)> {
    DEVICE_ATTRIBUTES
        .iter()
        .map(|(v, name)| (CUdevice_attribute(*v), *name))
}

/// The constant's name of a device attribute, if `cuda.h` knows it.
pub fn device_attribute_name(attr: CUdevice_attribute) -> Option<&'static str> {
    DEVICE_ATTRIBUTES
        .iter()
        .find(|(v, _)| *v == attr.0)
        .map(|(_, name)| *name)
}

/// The driver's own short text for `code` (`cuGetErrorString`), when the driver library is
/// already loaded and knows the code. Never loads the library (on cudajit's simulator, or
/// before anything used the driver, `None`: [`result_description`] has the table's text).
pub fn driver_error_string(code: CUresult) -> Option<String> {
    crate::loader::loaded_driver_library()?;
    let mut p: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: valid out-pointer; the driver returns a static string or an error.
    let res = unsafe { crate::cuGetErrorString(code, &mut p) }.ok()?;
    if res != CUresult::CUDA_SUCCESS || p.is_null() {
        return None;
    }
    // SAFETY: on success the driver returns a NUL-terminated static string.
    Some(
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned(),
    )
}
