//! The scalar types of the kernel IR.

/// The scalar types a kernel computes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarTy {
    /// `bool` (an `i1` in registers, a byte in memory).
    Bool,
    /// `i8`.
    I8,
    /// `u8`.
    U8,
    /// `i16`.
    I16,
    /// `u16`.
    U16,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `half::f16` (IEEE binary16).
    F16,
    /// `half::bf16` (bfloat16: f32's exponent, 8 significant bits).
    BF16,
    /// [`F8E4M3`](crate::F8E4M3): an 8-bit float (4 exponent, 3 mantissa bits), a storage
    /// type: loads, stores, casts, comparisons and the tensor cores (sm_89 and later).
    F8E4M3,
    /// [`F8E5M2`](crate::F8E5M2): an 8-bit float (5 exponent, 2 mantissa bits), a storage
    /// type like [`ScalarTy::F8E4M3`].
    F8E5M2,
}

impl ScalarTy {
    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarTy::F32 | ScalarTy::F64 | ScalarTy::F16 | ScalarTy::BF16
        )
    }
    /// Whether this is a 16-bit float (`f16`, `bf16`), computed natively where the target has
    /// the instructions and through f32 otherwise.
    pub fn is_half(self) -> bool {
        matches!(self, ScalarTy::F16 | ScalarTy::BF16)
    }
    /// Whether this is an 8-bit float (`F8E4M3`, `F8E5M2`): a storage type, converted through
    /// f32 (its casts) and read by the tensor cores; no arithmetic.
    pub fn is_fp8(self) -> bool {
        matches!(self, ScalarTy::F8E4M3 | ScalarTy::F8E5M2)
    }
    /// Whether this is a signed integer type.
    pub fn is_signed_int(self) -> bool {
        matches!(
            self,
            ScalarTy::I8 | ScalarTy::I16 | ScalarTy::I32 | ScalarTy::I64
        )
    }
    /// Whether this is an integer type (not bool).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            ScalarTy::I8
                | ScalarTy::U8
                | ScalarTy::I16
                | ScalarTy::U16
                | ScalarTy::I32
                | ScalarTy::U32
                | ScalarTy::I64
                | ScalarTy::U64
        )
    }
    /// Whether this is an integer type narrower than 32 bits (`i8`, `u8`, `i16`, `u16`).
    pub fn is_narrow_int(self) -> bool {
        matches!(
            self,
            ScalarTy::I8 | ScalarTy::U8 | ScalarTy::I16 | ScalarTy::U16
        )
    }
    /// A value's bits (as [`Scalar::to_bits`] encodes them: zero-extended) as a number: sign
    /// extended from the type's width for signed integers, unchanged otherwise.
    pub(crate) fn bits_as_i64(self, bits: u64) -> i64 {
        if self.is_signed_int() {
            let shift = 64 - 8 * self.size() as u32;
            ((bits << shift) as i64) >> shift
        } else {
            bits as i64
        }
    }
    /// Size in memory, bytes.
    pub const fn size(self) -> usize {
        match self {
            ScalarTy::Bool | ScalarTy::I8 | ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => 1,
            ScalarTy::I16 | ScalarTy::U16 | ScalarTy::F16 | ScalarTy::BF16 => 2,
            ScalarTy::I32 | ScalarTy::U32 | ScalarTy::F32 => 4,
            ScalarTy::I64 | ScalarTy::U64 | ScalarTy::F64 => 8,
        }
    }
    /// The Rust name.
    pub fn name(self) -> &'static str {
        match self {
            ScalarTy::Bool => "bool",
            ScalarTy::I8 => "i8",
            ScalarTy::U8 => "u8",
            ScalarTy::I16 => "i16",
            ScalarTy::U16 => "u16",
            ScalarTy::I32 => "i32",
            ScalarTy::U32 => "u32",
            ScalarTy::I64 => "i64",
            ScalarTy::U64 => "u64",
            ScalarTy::F32 => "f32",
            ScalarTy::F64 => "f64",
            ScalarTy::F16 => "f16",
            ScalarTy::BF16 => "bf16",
            ScalarTy::F8E4M3 => "F8E4M3",
            ScalarTy::F8E5M2 => "F8E5M2",
        }
    }
}
