//! Device memory (`DeviceArray` and its views), host memory the device can use (pinned, mapped,
//! managed), the copies between them, and tensor maps over device arrays ([`TensorMap`], for
//! Hopper's TMA copies), CUDA arrays with texture and surface objects over them ([`CudaArray`],
//! [`TextureObject`], [`SurfaceObject`]).

mod array;
mod element;
mod host;
mod host_nd;
pub(crate) mod layout;
mod managed;
mod pinned;
mod pinned_slice;
mod pool;
pub(crate) mod scratch;
pub(crate) mod slice;
pub(crate) mod staging;
mod strided;
pub(crate) mod tensor_map;
mod texture;
pub(crate) mod transfer;

/// The 128 bytes of an encoded tensor map, as kernels receive them.
pub use crate::backend::tensor_map::TensorMapBytes;
pub use array::{DeviceArray, DeviceView, DeviceViewMut};
pub(crate) use array::{Ordered, Release};
pub use element::{AnyBitPattern, DeviceCopy};
pub use host::HostSource;
pub(crate) use layout::Layout;
pub use managed::{ManagedBuffer, PrefetchTarget};
pub use pinned::{MappedHostBuffer, PinnedHostBuffer};
pub use pinned_slice::{PinnedSlice, PinnedSliceMut};
pub use pool::{MemPool, PoolStats};
pub(crate) use slice::{read_into_uninit, vec_filled_by};
pub use slice::{DeviceSlice, DeviceSliceMut};
#[doc(hidden)]
pub use staging::testing as staging_testing;
pub use strided::{AsStrided, AsStridedMut, StridedArray, StridedView, StridedViewMut};
pub use tensor_map::{
    TensorMap, TensorMapElement, TensorMapInterleave, TensorMapL2Promotion, TensorMapOobFill,
    TensorMapOptions, TensorMapSwizzle,
};
pub use texture::{
    AddressMode, ArrayOptions, ChannelKind, CudaArray, FilterMode, SurfaceObject, TexResult,
    TexelFormat, TexelLayout, TextureDesc, TextureObject,
};
