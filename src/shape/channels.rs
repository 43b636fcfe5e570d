//! Shapes whose axis 1 holds channels, `(N, C, ..)`: what the per-channel normalisations (batch, group and
//! instance norm) read, and how a per-channel value is laid over such a shape.

use super::dims::{Const, Dim, Shape, MAX_RANK};
use super::relations::{BroadcastShapes, BroadcastTo};

/// A batch of samples with channels on axis 1: `(N, C)`, `(N, C, L)`, `(N, C, H, W)` or `(N, C, D, H, W)`,
/// PyTorch's layout for batch, group and instance norm. The channel dim may be a `Const` or a runtime `usize`.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::shape::ChannelsFirst;
/// fn channels<S: ChannelsFirst>(shape: S) -> usize {
///     shape.dims()[1]
/// }
/// assert_eq!(channels(Rank4::<2, 3, 8, 8>::default()), 3);
/// ```
#[diagnostic::on_unimplemented(
    message = "shape `{Self}` has no channel axis: a per-channel norm takes (N, C), (N, C, L), (N, C, H, W) or \
               (N, C, D, H, W)",
    label = "channels are axis 1, after the batch axis",
    note = "for a single sample, add the batch axis first: `x.unsqueeze::<Axis<0>>()`"
)]
pub trait ChannelsFirst: BroadcastShapes<Self, Output = Self> {
    /// The channel dim, axis 1.
    type Channels: Dim;
    /// `(C, 1, ..)`: a per-channel value shaped to broadcast over `Self`.
    type Column: Shape + BroadcastTo<Self>;
    /// Every axis but the channels' (what batch statistics reduce over).
    const OTHERS: [bool; MAX_RANK];
    /// The channel dim of this shape.
    fn channels(&self) -> Self::Channels;
    /// The [`Self::Column`] of this shape.
    fn column(&self) -> Self::Column;
}

/// `[true, false, true, ..]` for a shape of `rank` axes: every axis but axis 1.
const fn all_but_channels(rank: usize) -> [bool; MAX_RANK] {
    let mut m = [false; MAX_RANK];
    let mut ax = 0;
    while ax < rank {
        m[ax] = ax != 1;
        ax += 1;
    }
    m
}

macro_rules! channels_first {
    ($(($($d:ident),*) => ($($one:ty),*);)*) => {$(
        #[diagnostic::do_not_recommend]
        impl<N: Dim, C: Dim, $($d: Dim),*> ChannelsFirst for (N, C, $($d,)*) {
            type Channels = C;
            type Column = (C, $($one,)*);
            const OTHERS: [bool; MAX_RANK] = all_but_channels(<Self as Shape>::RANK);
            fn channels(&self) -> C {
                self.1
            }
            fn column(&self) -> Self::Column {
                (self.1, $(<$one>::default(),)*)
            }
        }
    )*};
}

channels_first! {
    () => ();
    (L) => (Const<1>);
    (H, W) => (Const<1>, Const<1>);
    (Z, H, W) => (Const<1>, Const<1>, Const<1>);
}
