//! Shape rules without arithmetic, written as trait bounds so that `cargo check` (and an editor) reports them
//! at the user's call: an axis of size 1 for `squeeze`, two axes or more for a triangle. Rules that need
//! arithmetic on dims (sums, products, window sizes) are `const` checks ([`super::size_check`]): stable Rust
//! cannot compute with a const generic in a bound.

use super::{Const, Dim, Shape};

/// A dim [`Tensor::squeeze`](crate::Tensor::squeeze) can remove: size 1, or a runtime size (checked when the
/// op runs).
#[diagnostic::on_unimplemented(
    message = "squeeze: the axis has size `{Self}`; only an axis of size 1 can be removed",
    label = "this axis is not of size 1",
    note = "pick an axis of size 1, or keep one entry of it with `narrow::<Ax, START, 1>()` first"
)]
pub trait UnitDim: Dim {}
#[diagnostic::do_not_recommend]
impl UnitDim for Const<1> {}
#[diagnostic::do_not_recommend]
impl UnitDim for usize {}

/// A shape of rank 2 or more: a matrix or a batch of them, for [`Tensor::tril`](crate::Tensor::tril) and
/// [`Tensor::triu`](crate::Tensor::triu).
#[diagnostic::on_unimplemented(
    message = "tril and triu need a tensor of rank 2 or more (a matrix or a batch of them); this one is `{Self}`",
    label = "fewer than two axes",
    note = "a vector becomes a one-row matrix with `unsqueeze::<Axis<0>>()`"
)]
pub trait Matrices: Shape {}

macro_rules! matrices_impls {
    ($($d:ident)*) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim),*> Matrices for ($($d,)*) {}
    };
}
matrices_impls!(A B);
matrices_impls!(A B C);
matrices_impls!(A B C E);
matrices_impls!(A B C E F);
matrices_impls!(A B C E F G);
