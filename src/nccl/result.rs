//! NCCL result codes as cudajit errors.

use cudajit_sys::nccl as nc;

use crate::error::{Error, Result};

pub use crate::error::NcclCode;

/// NCCL's text for the last error of `comm` (or of the process, for a null `comm`).
fn last_error(comm: nc::ncclComm_t) -> String {
    // SAFETY: ncclGetLastError accepts a live communicator or null and returns a C string
    // owned by NCCL, valid until the next NCCL call on this thread; it is copied at once.
    match unsafe { nc::ncclGetLastError(comm) } {
        Ok(p) if !p.is_null() => {
            // SAFETY: as above.
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned()
        }
        _ => String::new(),
    }
}

/// Turns an NCCL call's outcome into a `Result`, naming the call on failure. `comm` is the
/// communicator the call used (null if none), for NCCL's account of the error.
pub(crate) fn check(
    res: std::result::Result<nc::ncclResult_t, nc::NcclLoadError>,
    call: &'static str,
    comm: nc::ncclComm_t,
) -> Result<()> {
    match res {
        Ok(nc::ncclResult_t::ncclSuccess) => Ok(()),
        Ok(code) => Err(Error::Nccl {
            call,
            code: NcclCode(code),
            detail: last_error(comm),
        }),
        Err(e) => Err(Error::NcclLoad(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_name_and_text() {
        let codes: Vec<_> = nc::result_codes().collect();
        assert_eq!(codes.len(), 9, "{codes:?}");
        for (code, name) in codes {
            assert_eq!(NcclCode(code).name(), Some(name));
            assert!(nc::result_description(code).is_some(), "{name}");
        }
        let c = NcclCode(nc::ncclResult_t::ncclInvalidUsage);
        assert_eq!(format!("{c:?}"), "ncclInvalidUsage(5)");
        assert_eq!(
            nc::result_description(c.0),
            Some("invalid usage (run with NCCL_DEBUG=WARN for details)")
        );
        let unknown = NcclCode(nc::ncclResult_t(77));
        assert_eq!(unknown.name(), None);
        assert_eq!(format!("{unknown:?}"), "ncclResult_t(77)");
    }

    #[test]
    fn an_error_code_becomes_an_error_naming_the_call() {
        let e = check(
            Ok(nc::ncclResult_t::ncclInvalidArgument),
            "ncclAllReduce",
            std::ptr::null_mut(),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("ncclAllReduce failed: ncclInvalidArgument (4): "),
            "{text}"
        );
        assert!(check(Ok(nc::ncclResult_t::ncclSuccess), "x", std::ptr::null_mut()).is_ok());
    }
}
