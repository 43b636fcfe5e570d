//! Views and indexing: `reshape`, `transpose`, `permute`, `narrow`, `broadcast`, `squeeze`, `unsqueeze`, `t` and
//! `contiguous` (`tensor.rs`), `flatten`/`unflatten` of axis ranges (`flatten.rs`), `.i(...)` (`index.rs`) and their traced forms (`traced.rs`). A view rewrites the
//! tensor's view record over the same buffer (`Kernels::view`; a dense copy on `Embedded`), so the family has no
//! kernels of its own; `contiguous` is the core `Kernels::copy`.

mod flatten;
mod index;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

pub use index::{IndexItem, IndexOp};
