//! CUDA arrays and the texture and surface objects over them: [`CudaArray`] (1-D, 2-D, 3-D,
//! layered, cube; texels of [`TexelFormat`]), [`TextureObject`] (over an array, linear or
//! pitched 2-D device memory, with its [`TextureDesc`]), [`SurfaceObject`] (over an array, for
//! kernels' surface loads and stores).

mod array;
mod format;
mod object;
mod surface;

pub use crate::backend::texture::{AddressMode, ChannelKind, FilterMode, TexelLayout};
pub use array::{ArrayOptions, CudaArray};
pub use format::{TexResult, TexelFormat};
pub use object::{TextureDesc, TextureObject};
pub use surface::SurfaceObject;
