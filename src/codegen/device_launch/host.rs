//! The host's side of kernels that launch kernels: the status words each launch gets
//! (zeroed in stream order), read back once the kernel, and with it every grid it launched,
//! has completed; a failure becomes an error that names the failing launch.

use crate::error::{Error, Result};
use crate::ir::device_launch::{error_text, f_sites, LaunchTarget, Site};
use crate::ir::FunctionIr;
use crate::memory::{DeviceArray, DeviceSlice};
use crate::stream::Stream;

/// The two status words of one launch: the first failure's `cudaError_t` and its site.
pub(crate) fn alloc(stream: &Stream) -> Result<DeviceArray<u32, ndarray::Ix1>> {
    stream.zeros_async::<u32, _>(2)
}

/// Waits for the launch (the copy is ordered after it on `stream`, and a grid completes only
/// after the grids it launched) and reports a device-side launch failure.
pub(crate) fn check(
    ir: &FunctionIr,
    stream: &Stream,
    status: &DeviceArray<u32, ndarray::Ix1>,
) -> Result<()> {
    let words = status.to_vec_async(stream)?;
    match words.as_slice() {
        [0, ..] => Ok(()),
        [code, site, ..] => Err(failure(ir, *code, *site)),
        _ => Ok(()),
    }
}

/// The error for failure `code` at site `site` (1-based, in the order the builder recorded
/// the kernel's launches and stream creations and destructions, or a child's that shares its
/// status words).
pub(crate) fn failure(ir: &FunctionIr, code: u32, site: u32) -> Error {
    let sites = f_sites(ir);
    let what = match sites.get(site.wrapping_sub(1) as usize) {
        Some(Site::StreamCreate(_) | Site::StreamDestroy(_)) => "a device-runtime call",
        _ => "a kernel launch from the device",
    };
    let at = match sites.get(site.wrapping_sub(1) as usize) {
        Some(Site::Launch(l)) => {
            let child = match &l.target {
                LaunchTarget::Itself => ir.name.clone(),
                LaunchTarget::Kernel(c) => c.name.clone(),
            };
            format!("launch #{site} (of `{child}`)")
        }
        Some(Site::StreamCreate(_)) => {
            format!("call #{site} (cudaStreamCreateWithFlags, device_stream_create)")
        }
        Some(Site::StreamDestroy(_)) => {
            format!("call #{site} (cudaStreamDestroy, device_stream_destroy)")
        }
        None => format!("launch #{site}"),
    };
    Error::Kernel {
        kernel: ir.name.clone(),
        message: format!(
            "{what} failed: {at} in `{}` or in a kernel it launched returned {}",
            ir.name,
            error_text(code)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::Kernel;

    #[test]
    fn stream_calls_are_numbered_with_the_launches_and_named_in_errors() {
        let child = Kernel::<(&mut [u32],)>::build("host_child", |_, _| {}).unwrap();
        // #1 creates, #2 launches, #3 destroys.
        let k = Kernel::<(&mut [u32],)>::build("host_parent", |k, (out,)| {
            let s = k.device_stream_create();
            k.launch_kernel(&child, 1u32, 1u32, 0u32, s, (out,));
            k.device_stream_destroy(s);
        })
        .unwrap();
        let text = |code, site| failure(k.ir(), code, site).to_string();
        let e = text(2, 1);
        assert!(
            e.contains("a device-runtime call failed: call #1 (cudaStreamCreateWithFlags")
                && e.contains("cudaErrorMemoryAllocation (2)"),
            "{e}"
        );
        let e = text(9, 2);
        assert!(
            e.contains("a kernel launch from the device failed: launch #2 (of `host_child`)"),
            "{e}"
        );
        let e = text(400, 3);
        assert!(
            e.contains("call #3 (cudaStreamDestroy, device_stream_destroy)")
                && e.contains("cudaErrorInvalidResourceHandle (400)"),
            "{e}"
        );
    }
}
