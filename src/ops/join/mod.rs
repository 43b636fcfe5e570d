//! Joining and rearranging along an axis: `cat`, `stack`, `split`, `flip`, `roll`, `pad`/`pad_value` (`tensor.rs`)
//! and their traced forms (`traced.rs`); padding by the tensor's own entries, `pad_mode` (`pad.rs`). `cat` and what is built on it (`stack`, `pad`, and `roll`: the tail, then the
//! head) run the family's kernel, [`JoinKernels`]: one host body for `Cpu` and `Embedded` (`host.rs`) and a copy
//! per part on CUDA (`cuda.rs`); `split` is views, `flip` a gather.

mod concat;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod flip;
mod host;
mod pad;
mod repeat;
mod sizes;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;
#[cfg(feature = "alloc")] // its pieces are a Vec
mod unbind;

#[cfg(feature = "std")]
pub use concat::TracedCatParts;
pub use concat::{CatParts, Erased};
pub use flip::FlipAxes;
pub use pad::{Circular, PadMode, PadModeArg, Reflect, Replicate};
pub use sizes::SplitSizes;
#[cfg(feature = "std")]
pub(crate) use traced::embed_rule;

use crate::device::Kernels;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;

/// The family's kernel, which every device implements; [`crate::ops::Device`] requires it beside [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: `concat` initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait JoinKernels: Kernels {
    /// The parts laid end to end along `axis` (their other dims agree).
    fn concat<T: WithDType>(
        parts: &[(&Self::Buffer<T>, &Layout)],
        axis: usize,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}
