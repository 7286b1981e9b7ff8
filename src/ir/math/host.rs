//! The math implementations' operations on the host: plain IEEE arithmetic on `f32`/`f64`,
//! the same operations the GPU performs. The tests measure the implementations' accuracy with
//! them, and the simulator evaluates kernels' math functions with them, so that it computes
//! what the GPU computes with cudajit's own implementations.

use super::alg::Ops;

macro_rules! host {
    ($name:ident, $f:ty, $i:ty, $dbl:expr) => {
        /// Host arithmetic for one float type.
        pub(crate) struct $name;
        impl Ops for $name {
            type F = $f;
            type I = $i;
            type B = bool;
            fn double(&self) -> bool {
                $dbl
            }
            fn c(&self, v: f64) -> $f {
                v as $f
            }
            fn ci(&self, v: i64) -> $i {
                v as $i
            }
            fn add(&self, a: $f, b: $f) -> $f {
                a + b
            }
            fn sub(&self, a: $f, b: $f) -> $f {
                a - b
            }
            fn mul(&self, a: $f, b: $f) -> $f {
                a * b
            }
            fn div(&self, a: $f, b: $f) -> $f {
                a / b
            }
            fn neg(&self, a: $f) -> $f {
                -a
            }
            fn fma(&self, a: $f, b: $f, c: $f) -> $f {
                a.mul_add(b, c)
            }
            fn sqrt(&self, a: $f) -> $f {
                a.sqrt()
            }
            fn abs(&self, a: $f) -> $f {
                a.abs()
            }
            fn rint(&self, a: $f) -> $f {
                a.round_ties_even()
            }
            fn floor(&self, a: $f) -> $f {
                a.floor()
            }
            fn copysign(&self, a: $f, s: $f) -> $f {
                a.copysign(s)
            }
            fn fmin(&self, a: $f, b: $f) -> $f {
                a.min(b)
            }
            fn fmax(&self, a: $f, b: $f) -> $f {
                a.max(b)
            }
            fn lt(&self, a: $f, b: $f) -> bool {
                a < b
            }
            fn le(&self, a: $f, b: $f) -> bool {
                a <= b
            }
            fn gt(&self, a: $f, b: $f) -> bool {
                a > b
            }
            fn eq(&self, a: $f, b: $f) -> bool {
                a == b
            }
            fn is_nan(&self, a: $f) -> bool {
                a.is_nan()
            }
            fn sel(&self, c: bool, a: $f, b: $f) -> $f {
                if c {
                    a
                } else {
                    b
                }
            }
            fn seli(&self, c: bool, a: $i, b: $i) -> $i {
                if c {
                    a
                } else {
                    b
                }
            }
            fn bits(&self, a: $f) -> $i {
                a.to_bits() as $i
            }
            fn from_bits(&self, a: $i) -> $f {
                <$f>::from_bits(a as _)
            }
            fn to_int(&self, a: $f) -> $i {
                a as $i
            }
            fn to_f(&self, a: $i) -> $f {
                a as $f
            }
            fn iadd(&self, a: $i, b: $i) -> $i {
                a.wrapping_add(b)
            }
            fn isub(&self, a: $i, b: $i) -> $i {
                a.wrapping_sub(b)
            }
            fn iand(&self, a: $i, b: $i) -> $i {
                a & b
            }
            fn ior(&self, a: $i, b: $i) -> $i {
                a | b
            }
            fn ishl(&self, a: $i, n: u32) -> $i {
                a.wrapping_shl(n)
            }
            fn iasr(&self, a: $i, n: u32) -> $i {
                a >> n
            }
            fn ilt(&self, a: $i, b: $i) -> bool {
                a < b
            }
            fn ieq(&self, a: $i, b: $i) -> bool {
                a == b
            }
            fn and(&self, a: bool, b: bool) -> bool {
                a && b
            }
            fn or(&self, a: bool, b: bool) -> bool {
                a || b
            }
            fn not(&self, a: bool) -> bool {
                !a
            }
        }
    };
}
host!(H32, f32, i32, false);
host!(H64, f64, i64, true);
