//! Reverse-mode automatic differentiation with typed gradients.
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::autograd::Var;
//!
//! // y = x^2 + 5x + 4 at x = [3, 1, 4] (candle's example): dy/dx = 2x + 5 = [11, 7, 13].
//! let x = Var::new(Tensor::<f32, _, Cpu>::from_array([3., 1., 4.]));
//! let xt = x.trace();
//! let y = &(&xt * &xt) + &(&xt * 5.0) + 4.0;
//! let grads = y.sum_all().backward();
//! let dx: Tensor<f32, Rank1<3>, Cpu> = grads.get(&x); // the parameter's exact type
//! assert_eq!(dx.to_array(), [11., 7., 13.]);
//! ```
//!
//! # Design
//!
//! - **Inference pays nothing.** [`Tensor`](crate::Tensor) holds no tape and no flag; its ops never look for
//!   one. Tracking is opt-in: a [`Traced`] value is a tensor plus a node in a graph of the ops that made it.
//! - **Parameters are [`Var`]s**: shared cells holding a tensor, with an identity that gradients are keyed by.
//!   `var.trace()` starts a forward pass from the current value; optimizers update the cell in place.
//! - **`backward()` exists only for rank-0 [`Traced`] values**, so differentiating a non-scalar, or a plain
//!   tensor, does not compile. It consumes the value and walks the graph once in reverse topological order;
//!   each op's backward rule runs once, frees what it captured, and adds its inputs' gradients.
//! - **Gradients are typed at the edges**: inside the walk they are stored shape-erased per node (every rank
//!   viewed as rank 6 behind leading size-1 axes, so the backward rules and the optimizers' updates are compiled
//!   once per element type and device, not once per shape), and [`Gradients::get`] hands a parameter's gradient
//!   back as `Tensor<T, S, D>` of exactly the `Var`'s type (the downcast cannot fail: the id belongs to that
//!   `Var`).
//! - **Kernels are reused**: a backward rule is written with the same tensor ops as the forward pass (plus
//!   shape-erased helpers such as summing a broadcast gradient back to its operand's shape), so every device
//!   that runs the forward ops runs the backward ones.
//!
//! How this compares with the two Rust references:
//! - candle keeps an optional graph pointer inside every tensor (`Tensor` = `Arc<Tensor_>` with an `Op` field);
//!   every op checks whether to record. Simple to use, but inference tensors carry the field and the check, and
//!   whether a value is tracked is invisible in its type.
//! - dfdx puts the tape in the tensor's type (`Tensor<S, E, D, OwnedTape>`), moving it from op to op; it costs
//!   nothing when absent, but the tape type parameter spreads through every signature and ops with two tracked
//!   inputs must merge tapes.
//! - Here the tracked type is separate ([`Traced`]) and the graph is shared nodes (like candle's), so ops with
//!   several tracked inputs need nothing special and plain `Tensor` signatures stay as they are.
//!
//! Devices: `Cpu` and `Cuda`. Some backward rules hold intermediates whose shapes the types do not name (the
//! sums of a gradient over broadcast axes, say), which only a device whose storage does not depend on the shape
//! can hold; the [`Embedded`](crate::Embedded) device, whose tensors are arrays of their static shape, is for
//! inference, and tracing one of its tensors is refused at `cargo check` ([`AutogradDevice`]).
//!
//! Memory: a graph lives as long as some `Traced` value of it does; `backward` frees each node's captured
//! tensors as it goes. To let an optimizer update a parameter in place (no reallocation), drop the traced
//! values of the last step before calling it, or their captured copies keep the old buffer shared (the update
//! is still correct, through a fresh buffer).

mod check;
mod graph;
mod parts;
mod traced;
mod var;

pub use check::{check_gradient, GradCheck};
pub use graph::Gradients;
pub(crate) use traced::{record_with, Slot};
pub use traced::{Traceable, Traced};
pub use var::Var;
pub(crate) use var::VarCell;

use crate::ops::Device;

/// A device autograd runs on: one whose tensors share shape-free buffers (`Cpu`, `Cuda`). [`Var::new`] and
/// [`Traced::constant`], where every traced value starts, require it, so tracing an
/// [`Embedded`](crate::Embedded) tensor is an error at `cargo check`.
#[diagnostic::on_unimplemented(
    message = "autograd runs on devices whose tensors share buffers (Cpu, Cuda); `{Self}` is for inference",
    label = "not a device autograd runs on",
    note = "train on `Cpu` (or `Cuda`), then give the trained parameters to the same model on `Embedded`"
)]
pub trait AutogradDevice: Device {}

#[diagnostic::do_not_recommend]
impl AutogradDevice for crate::Cpu {}
#[cfg(feature = "cuda")]
#[diagnostic::do_not_recommend]
impl AutogradDevice for crate::Cuda {}

/// Fails the build (when instantiated) for a device whose tensors are dense arrays: the check of the entry
/// points that code generic over any [`Device`] reaches (the layers' constructors, traced ops' constants), where
/// an [`AutogradDevice`] bound would spread to every caller.
pub(crate) const fn assert_device<D: Device>() {
    use crate::device::Kernels;
    use crate::layout::ViewOf;
    assert!(
        !<<D as Kernels>::View<()> as ViewOf<()>>::DENSE,
        "autograd runs on devices whose tensors share buffers (Cpu, Cuda): the Embedded device is for inference"
    )
}
