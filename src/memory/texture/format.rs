//! The texel types of CUDA arrays and textures, and the result types of texture fetches.

use super::ChannelKind;
use crate::backend::texture::TexelLayout;
use crate::ir::ScalarTy;
use crate::memory::DeviceCopy;

mod sealed {
    pub trait Sealed {}
}

/// A texel type: `u8`, `u16`, `i8`, `i16`, [`f16`](crate::f16), `f32` (one channel), or
/// `[C; 2]` / `[C; 4]` of them (two or four channels).
pub trait TexelFormat: DeviceCopy + sealed::Sealed {
    /// One channel's type.
    type Channel: DeviceCopy;
    /// The channel type and count.
    const LAYOUT: TexelLayout;
}

macro_rules! texels {
    ($($t:ty => $k:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl TexelFormat for $t {
            type Channel = $t;
            const LAYOUT: TexelLayout = TexelLayout { kind: ChannelKind::$k, channels: 1 };
        }
        impl sealed::Sealed for [$t; 2] {}
        impl TexelFormat for [$t; 2] {
            type Channel = $t;
            const LAYOUT: TexelLayout = TexelLayout { kind: ChannelKind::$k, channels: 2 };
        }
        impl sealed::Sealed for [$t; 4] {}
        impl TexelFormat for [$t; 4] {
            type Channel = $t;
            const LAYOUT: TexelLayout = TexelLayout { kind: ChannelKind::$k, channels: 4 };
        }
    )*};
}
texels!(u8 => U8, u16 => U16, i8 => I8, i16 => I16, half::f16 => F16, f32 => F32);

mod sealed_result {
    pub trait Sealed {}
}

/// What a texture fetch returns per channel: `f32` (float texels, or integer texels read as
/// normalized floats), `i32` (signed integer texels read as they are) or `u32` (unsigned).
pub trait TexResult: DeviceCopy + sealed_result::Sealed {
    /// The value's type in the kernel IR.
    #[doc(hidden)]
    const RESULT: ScalarTy;
}

impl sealed_result::Sealed for f32 {}
impl TexResult for f32 {
    const RESULT: ScalarTy = ScalarTy::F32;
}
impl sealed_result::Sealed for i32 {}
impl TexResult for i32 {
    const RESULT: ScalarTy = ScalarTy::I32;
}
impl sealed_result::Sealed for u32 {}
impl TexResult for u32 {
    const RESULT: ScalarTy = ScalarTy::U32;
}
