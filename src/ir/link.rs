//! Kinds of foreign device code a kernel links with.

/// What kind of device code a link input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LinkKind {
    /// PTX text (stored with its terminating NUL).
    Ptx,
    /// A cubin (ELF) for the device's architecture.
    Cubin,
    /// A fatbin.
    Fatbin,
    /// A relocatable device object (`nvcc -dc` output, `.o`).
    Object,
    /// A library of relocatable device objects (`.a`).
    Library,
}
