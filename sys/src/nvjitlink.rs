//! NVIDIA's nvJitLink (`libnvJitLink.so`), loaded at run time from a path the caller found: the
//! toolkit's PTX compiler as a library, shipped in CUDA toolkits and in the
//! `nvidia-nvjitlink-cu12` / `nvidia-nvjitlink` (CUDA 13) wheels. cudajit can compile a kernel's
//! PTX with it instead of the driver's JIT (`CUDAJIT_PTX_COMPILER=nvjitlink`).
//!
//! Only the calls that compile PTX to a cubin are bound, with the signatures of `nvJitLink.h`
//! (CUDA 12.0 and later export them unversioned):
//! `nvJitLinkCreate`, `nvJitLinkAddData`, `nvJitLinkComplete`, `nvJitLinkGetLinkedCubinSize`,
//! `nvJitLinkGetLinkedCubin`, the error and info logs, `nvJitLinkDestroy`, `nvJitLinkVersion`.

use std::ffi::{c_char, c_uint, c_void, CStr};
use std::path::Path;

/// `nvJitLinkHandle`: an opaque pointer.
type Handle = *mut c_void;
/// `nvJitLinkResult`: 0 is success.
type Res = c_uint;
/// `NVJITLINK_INPUT_PTX` of `nvJitLinkInputType`.
const INPUT_PTX: c_uint = 2;

type CreateFn = unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> Res;
type DestroyFn = unsafe extern "C" fn(*mut Handle) -> Res;
type AddDataFn = unsafe extern "C" fn(Handle, c_uint, *const c_void, usize, *const c_char) -> Res;
type CompleteFn = unsafe extern "C" fn(Handle) -> Res;
type SizeFn = unsafe extern "C" fn(Handle, *mut usize) -> Res;
type BytesFn = unsafe extern "C" fn(Handle, *mut c_void) -> Res;
type LogFn = unsafe extern "C" fn(Handle, *mut c_char) -> Res;
type VersionFn = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> Res;

/// A loaded nvJitLink library.
pub struct NvJitLink {
    create: CreateFn,
    destroy: DestroyFn,
    add_data: AddDataFn,
    complete: CompleteFn,
    cubin_size: SizeFn,
    cubin: BytesFn,
    error_log_size: SizeFn,
    error_log: LogFn,
    info_log_size: SizeFn,
    info_log: LogFn,
    version: (u32, u32),
    // Kept last so that it is dropped after nothing can call the pointers above.
    _library: libloading::Library,
}

impl std::fmt::Debug for NvJitLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NvJitLink {}.{}", self.version.0, self.version.1)
    }
}

/// What one compilation gave: the cubin and nvJitLink's info log.
#[derive(Debug)]
pub struct Compiled {
    /// The cubin (an ELF image).
    pub cubin: Vec<u8>,
    /// The info log (warnings; empty when there were none).
    pub info_log: String,
}

impl NvJitLink {
    /// Loads the library at `path` and resolves its functions; an error names the file and the
    /// missing symbol.
    pub fn open(path: &Path) -> Result<Self, String> {
        // SAFETY: loading a shared library runs its initialisers; the path is one the caller
        // chose by cudajit's search rules (absolute, NVIDIA's file name).
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
        macro_rules! sym {
            ($name:literal, $ty:ty) => {{
                // SAFETY: the symbol is nvJitLink.h's function of that name, whose C signature
                // `$ty` spells; the pointer is used only while `library` is alive (it is
                // stored beside it).
                let s: libloading::Symbol<$ty> = unsafe { library.get($name) }.map_err(|e| {
                    format!(
                        "{} has no {}: {e}",
                        path.display(),
                        String::from_utf8_lossy(&$name[..$name.len() - 1])
                    )
                })?;
                *s
            }};
        }
        let version_fn = sym!(b"nvJitLinkVersion\0", VersionFn);
        let (mut major, mut minor) = (0, 0);
        // SAFETY: both pointers are valid for writes.
        if unsafe { version_fn(&mut major, &mut minor) } != 0 {
            return Err(format!("{}: nvJitLinkVersion failed", path.display()));
        }
        Ok(NvJitLink {
            create: sym!(b"nvJitLinkCreate\0", CreateFn),
            destroy: sym!(b"nvJitLinkDestroy\0", DestroyFn),
            add_data: sym!(b"nvJitLinkAddData\0", AddDataFn),
            complete: sym!(b"nvJitLinkComplete\0", CompleteFn),
            cubin_size: sym!(b"nvJitLinkGetLinkedCubinSize\0", SizeFn),
            cubin: sym!(b"nvJitLinkGetLinkedCubin\0", BytesFn),
            error_log_size: sym!(b"nvJitLinkGetErrorLogSize\0", SizeFn),
            error_log: sym!(b"nvJitLinkGetErrorLog\0", LogFn),
            info_log_size: sym!(b"nvJitLinkGetInfoLogSize\0", SizeFn),
            info_log: sym!(b"nvJitLinkGetInfoLog\0", LogFn),
            version: (major, minor),
            _library: library,
        })
    }

    /// The library's version (`nvJitLinkVersion`: e.g. 13.0).
    pub fn version(&self) -> (u32, u32) {
        self.version
    }

    /// Compiles one PTX module (`ptx`, NUL-terminated) to a cubin with `options` (e.g.
    /// `-arch=sm_90a`). An error carries the step that failed, its result code and
    /// nvJitLink's error log.
    pub fn compile_ptx(&self, ptx: &CStr, options: &[&CStr]) -> Result<Compiled, String> {
        let opts: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: `h` is valid for a write; `opts` holds `opts.len()` NUL-terminated strings
        // that outlive the call.
        let r = unsafe { (self.create)(&mut h, opts.len() as u32, opts.as_ptr()) };
        if r != 0 || h.is_null() {
            return Err(format!(
                "nvJitLinkCreate returned {r} for options {options:?}"
            ));
        }
        let guard = Link { lib: self, h };
        // SAFETY: the handle is live; the data pointer and size describe `ptx` with its NUL,
        // and the name is a static C string.
        let r = unsafe {
            (self.add_data)(
                h,
                INPUT_PTX,
                ptx.as_ptr().cast(),
                ptx.to_bytes_with_nul().len(),
                c"kernel.ptx".as_ptr(),
            )
        };
        if r != 0 {
            return Err(format!(
                "nvJitLinkAddData returned {r}: {}",
                guard.error_log()
            ));
        }
        // SAFETY: the handle is live and has its input.
        let r = unsafe { (self.complete)(h) };
        if r != 0 {
            return Err(format!(
                "nvJitLinkComplete returned {r}: {}",
                guard.error_log()
            ));
        }
        let mut size = 0usize;
        // SAFETY: the handle is complete; `size` is valid for a write.
        let r = unsafe { (self.cubin_size)(h, &mut size) };
        if r != 0 || size == 0 {
            return Err(format!(
                "nvJitLinkGetLinkedCubinSize returned {r} (size {size})"
            ));
        }
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` has the `size` bytes nvJitLink said it writes.
        let r = unsafe { (self.cubin)(h, cubin.as_mut_ptr().cast()) };
        if r != 0 {
            return Err(format!("nvJitLinkGetLinkedCubin returned {r}"));
        }
        Ok(Compiled {
            cubin,
            info_log: guard.log(self.info_log_size, self.info_log),
        })
    }
}

/// One live `nvJitLinkHandle`, destroyed when dropped.
struct Link<'a> {
    lib: &'a NvJitLink,
    h: Handle,
}

impl Link<'_> {
    /// A log of the handle read with its size and text functions (empty if there is none).
    fn log(&self, size_fn: SizeFn, log_fn: LogFn) -> String {
        let mut size = 0usize;
        // SAFETY: the handle is live; `size` is valid for a write.
        if unsafe { size_fn(self.h, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has the `size` bytes (NUL included) nvJitLink said it writes.
        if unsafe { log_fn(self.h, buf.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim().to_string()
    }

    fn error_log(&self) -> String {
        self.log(self.lib.error_log_size, self.lib.error_log)
    }
}

impl Drop for Link<'_> {
    fn drop(&mut self) {
        // SAFETY: the handle was created by nvJitLinkCreate and is destroyed once.
        unsafe { (self.lib.destroy)(&mut self.h) };
    }
}
