//! Element types and reduction operators, mapped to NCCL's at compile time.

use cudajit_sys::nccl as nc;

use crate::memory::DeviceCopy;

mod private {
    /// Seals [`super::NcclType`]: only the types NCCL reduces natively implement it.
    pub trait Sealed {}
}

/// An element type NCCL moves and reduces natively: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`,
/// [`f16`](crate::f16), [`bf16`](crate::bf16), `f32`, `f64`. Sealed.
pub trait NcclType: DeviceCopy + private::Sealed {
    /// NCCL's data type (`ncclFloat32`, ...).
    const DATA_TYPE: nc::ncclDataType_t;
    /// The Rust type's name, for error messages.
    const NAME: &'static str;
}

macro_rules! nccl_types {
    ($($t:ty => $dt:ident),* $(,)?) => {$(
        impl private::Sealed for $t {}
        impl NcclType for $t {
            const DATA_TYPE: nc::ncclDataType_t = nc::ncclDataType_t::$dt;
            const NAME: &'static str = stringify!($t);
        }
    )*};
}

nccl_types!(
    i8 => ncclInt8,
    u8 => ncclUint8,
    i32 => ncclInt32,
    u32 => ncclUint32,
    i64 => ncclInt64,
    u64 => ncclUint64,
    half::f16 => ncclFloat16,
    half::bf16 => ncclBfloat16,
    f32 => ncclFloat32,
    f64 => ncclFloat64,
);

/// A reduction operator of [`all_reduce`](super::Communicator::all_reduce),
/// [`reduce`](super::Communicator::reduce) and [`reduce_scatter`](super::Communicator::reduce_scatter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum over ranks.
    Sum,
    /// The product over ranks.
    Prod,
    /// The smallest value over ranks.
    Min,
    /// The largest value over ranks.
    Max,
    /// The mean over ranks (the sum divided by the rank count; NCCL 2.10 or later).
    Avg,
}

impl ReduceOp {
    /// NCCL's operator.
    pub fn raw(self) -> nc::ncclRedOp_t {
        match self {
            ReduceOp::Sum => nc::ncclRedOp_t::ncclSum,
            ReduceOp::Prod => nc::ncclRedOp_t::ncclProd,
            ReduceOp::Min => nc::ncclRedOp_t::ncclMin,
            ReduceOp::Max => nc::ncclRedOp_t::ncclMax,
            ReduceOp::Avg => nc::ncclRedOp_t::ncclAvg,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt<T: NcclType>() -> (u32, &'static str) {
        (T::DATA_TYPE.0, T::NAME)
    }

    #[test]
    fn element_types_map_to_nccl_types() {
        assert_eq!(dt::<i8>(), (0, "i8"));
        assert_eq!(dt::<u8>(), (1, "u8"));
        assert_eq!(dt::<i32>(), (2, "i32"));
        assert_eq!(dt::<u32>(), (3, "u32"));
        assert_eq!(dt::<i64>(), (4, "i64"));
        assert_eq!(dt::<u64>(), (5, "u64"));
        assert_eq!(dt::<half::f16>().0, 6);
        assert_eq!(dt::<f32>(), (7, "f32"));
        assert_eq!(dt::<f64>(), (8, "f64"));
        assert_eq!(dt::<half::bf16>().0, 9);
        assert_eq!(f32::DATA_TYPE, nc::ncclDataType_t::ncclFloat);
        assert_eq!(i32::DATA_TYPE, nc::ncclDataType_t::ncclInt);
    }

    #[test]
    fn reduce_ops_map_to_nccl_ops() {
        let raw: Vec<u32> = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Avg,
        ]
        .iter()
        .map(|o| o.raw().0)
        .collect();
        assert_eq!(raw, [0, 1, 2, 3, 4]);
    }
}
