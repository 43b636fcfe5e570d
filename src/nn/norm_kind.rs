//! Which inputs a normalisation layer of PyTorch's `1d`/`2d`/`3d` kinds takes: [`BatchNorm1d`](super::BatchNorm1d)
//! `(N, C)` or `(N, C, L)`, [`BatchNorm2d`](super::BatchNorm2d) `(N, C, H, W)`, [`BatchNorm3d`](super::BatchNorm3d)
//! `(N, C, D, H, W)`, and the instance norms likewise, as PyTorch checks them; the generic layer
//! ([`AnyRank`]) takes every rank it has an impl for. A wrong rank is an error at `cargo check`.

use crate::shape::{Const, Dim};

/// A layer kind with `N` spatial axes (PyTorch's `BatchNorm{N}d`, `InstanceNorm{N}d`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Spatial<const N: usize>;

/// The generic layer's kind: every input rank the layer has an impl for.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyRank;

/// `Self` (a layer kind) takes inputs of shape `S` with `C` channels on axis 1.
#[diagnostic::on_unimplemented(
    message = "a normalisation layer of kind `{Self}` does not take an input of shape `{S}`",
    label = "input of the wrong rank for this layer",
    note = "BatchNorm1d takes (N, C) or (N, C, L), BatchNorm2d (N, C, H, W), BatchNorm3d (N, C, D, H, W); InstanceNorm1d (N, C, L), InstanceNorm2d (N, C, H, W)",
    note = "the generic `BatchNorm<T, C, D>` / `InstanceNorm<T, C, D>` take any of them"
)]
pub trait TakesInput<S, const C: usize> {}

#[diagnostic::do_not_recommend]
impl<S, const C: usize> TakesInput<S, C> for AnyRank {}
#[diagnostic::do_not_recommend]
impl<B: Dim, const C: usize> TakesInput<(B, Const<C>), C> for Spatial<1> {}
#[diagnostic::do_not_recommend]
impl<B: Dim, L: Dim, const C: usize> TakesInput<(B, Const<C>, L), C> for Spatial<1> {}
#[diagnostic::do_not_recommend]
impl<B: Dim, H: Dim, W: Dim, const C: usize> TakesInput<(B, Const<C>, H, W), C> for Spatial<2> {}
#[diagnostic::do_not_recommend]
impl<B: Dim, Z: Dim, H: Dim, W: Dim, const C: usize> TakesInput<(B, Const<C>, Z, H, W), C>
    for Spatial<3>
{
}
