//! Device memory (`DeviceArray` and its views), host memory the device can use (pinned, mapped,
//! managed), and the copies between them.

mod array;
mod element;
mod host;
pub(crate) mod layout;
mod managed;
mod pinned;
mod pool;
pub(crate) mod scratch;
pub(crate) mod slice;
pub(crate) mod staging;
mod strided;
pub(crate) mod transfer;

pub use array::{DeviceArray, DeviceView, DeviceViewMut};
pub use element::{AnyBitPattern, DeviceCopy};
pub use host::HostSource;
pub(crate) use layout::Layout;
pub use managed::{ManagedBuffer, PrefetchTarget};
pub use pinned::{MappedHostBuffer, PinnedHostBuffer};
pub use pool::{MemPool, PoolStats};
pub(crate) use slice::{read_into_uninit, vec_filled_by};
pub use slice::{DeviceSlice, DeviceSliceMut};
#[doc(hidden)]
pub use staging::testing as staging_testing;
pub use strided::{AsStrided, AsStridedMut, StridedArray, StridedView, StridedViewMut};
