//! Limits a builder kernel must fit before it is loaded, checked the same way by every backend
//! against its device's attributes: the driver's (queried) and the simulator's (emulated).

use crate::error::{Error, LaunchError, Result};
use crate::ir::FunctionIr;

/// Static shared memory of a kernel and the device functions it calls, in bytes: the sum of
/// their shared arrays, each function's counted once however often it is called (the
/// lowering declares them once per module).
pub(crate) fn static_shared_bytes(f: &FunctionIr) -> u64 {
    f.tree().iter().flat_map(|g| &g.shared).fold(0u64, |a, s| {
        a.saturating_add(s.len.saturating_mul(s.elem.size() as u64))
    })
}

/// Refuses a kernel whose static shared memory exceeds `limit` bytes per block (the device's
/// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`, 48 KiB on every architecture: more is
/// only given as dynamic shared memory, up to `optin` bytes after opting in), naming the
/// kernel, its bytes, the limit and what to do instead. `optin` 0: unknown.
pub(crate) fn check_static_shared(f: &FunctionIr, limit: i32, optin: i32) -> Result<()> {
    let bytes = static_shared_bytes(f);
    if limit <= 0 || bytes <= limit as u64 {
        return Ok(());
    }
    let dynamic = if optin > limit {
        format!(
            "dynamic shared memory (`k.dynamic_shared`, `dynamic_shared2`/`3`) gets up to {optin} \
             bytes per block on this device once opted in with \
             `kernel.function(&ctx)?.set_max_dynamic_shared_memory(bytes)`"
        )
    } else {
        "dynamic shared memory (`k.dynamic_shared`, `dynamic_shared2`/`3`, sized at launch) \
         is not bound by it"
            .to_string()
    };
    Err(Error::Launch(LaunchError::SharedMemory {
        message: format!(
            "kernel `{}` declares {bytes} bytes ({:.1} KiB) of static shared memory (its shared \
             arrays and those of the device functions it calls), over the device's limit of \
             {limit} bytes ({} KiB) of static shared memory per block, so it cannot be loaded; \
             use smaller tiles (or fewer shared arrays), or move the large arrays to dynamic \
             shared memory: {dynamic}",
            f.name,
            bytes as f64 / 1024.0,
            limit / 1024
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::copy_kernel;
    use crate::ir::{ArrayDecl, ScalarTy};

    fn with_shared(dims: &[u64]) -> FunctionIr {
        let mut f = (*copy_kernel("tiles")).clone();
        f.shared.push(ArrayDecl {
            elem: ScalarTy::F32,
            len: dims.iter().product(),
            dims: dims.to_vec(),
        });
        f
    }

    #[test]
    fn static_shared_memory_over_the_limit_is_refused_with_what_to_do() {
        let ok = with_shared(&[64, 192]); // exactly 48 KiB
        assert_eq!(static_shared_bytes(&ok), 48 * 1024);
        check_static_shared(&ok, 48 * 1024, 227 * 1024).unwrap();
        let big = with_shared(&[128, 256]); // 128 KiB
        let e = check_static_shared(&big, 48 * 1024, 227 * 1024).unwrap_err();
        let m = e.to_string();
        assert!(
            matches!(e, Error::Launch(LaunchError::SharedMemory { .. })),
            "{e:?}"
        );
        for part in [
            "kernel `tiles` declares 131072 bytes (128.0 KiB) of static shared memory",
            "limit of 49152 bytes (48 KiB)",
            "up to 232448 bytes",
            "set_max_dynamic_shared_memory",
            "smaller tiles",
        ] {
            assert!(m.contains(part), "{part:?} not in: {m}");
        }
        // A device function's arrays count too.
        let mut k = (*copy_kernel("caller")).clone();
        k.callees.push(std::sync::Arc::new(big));
        assert!(check_static_shared(&k, 48 * 1024, 0).is_err());
    }
}
