//! Reductions over typed axes: which shapes a reduction over `Axes` accepts, and what it returns.
//!
//! `Axes` is one `Axis<I>` or a tuple of them in increasing order, `(Axis<0>, Axis<2>)`. The impls are generated
//! (one per rank and subset of axes, 120 in all, by `tools/gen_reduce_impls.py`) rather than derived from
//! `HasAxis`, so that a bad axis list gives a single error naming the shape and the axes.

use super::dims::{Const, Dim, Shape, MAX_RANK};
use super::relations::Axis;

/// `Self` can be reduced over `Axes`.
#[diagnostic::on_unimplemented(
    message = "cannot reduce shape `{Self}` over `{Axes}`",
    label = "each axis must exist in the shape, and a tuple lists them once, in increasing order",
    note = "reduce one axis with `Axis<I>`, several with `(Axis<0>, Axis<2>)`, or all with the `_all` methods"
)]
pub trait ReduceShape<Axes>: Shape {
    /// The shape with the reduced axes removed.
    type Output: Shape;
    /// The shape with the reduced axes kept as size 1 (`keepdim`).
    type KeepDim: Shape;
    /// Which axes are reduced.
    const REDUCED: [bool; MAX_RANK];
}

macro_rules! reduce_impl {
    ([$($d:ident)*] $axes:ty => [$($o:ident)*] keep [$($k:ty),*] axes [$($r:literal)*]) => {
        #[diagnostic::do_not_recommend]
        impl<$($d: Dim),*> ReduceShape<$axes> for ($($d,)*) {
            type Output = ($($o,)*);
            type KeepDim = ($($k,)*);
            const REDUCED: [bool; MAX_RANK] = {
                let mut m = [false; MAX_RANK];
                $(m[$r] = true;)*
                m
            };
        }
    };
}

reduce_impl!([A] Axis<0> => [] keep [Const<1>] axes [0]);
reduce_impl!([A B] Axis<0> => [B] keep [Const<1>, B] axes [0]);
reduce_impl!([A B] Axis<1> => [A] keep [A, Const<1>] axes [1]);
reduce_impl!([A B] (Axis<0>, Axis<1>) => [] keep [Const<1>, Const<1>] axes [0 1]);
reduce_impl!([A B C] Axis<0> => [B C] keep [Const<1>, B, C] axes [0]);
reduce_impl!([A B C] Axis<1> => [A C] keep [A, Const<1>, C] axes [1]);
reduce_impl!([A B C] Axis<2> => [A B] keep [A, B, Const<1>] axes [2]);
reduce_impl!([A B C] (Axis<0>, Axis<1>) => [C] keep [Const<1>, Const<1>, C] axes [0 1]);
reduce_impl!([A B C] (Axis<0>, Axis<2>) => [B] keep [Const<1>, B, Const<1>] axes [0 2]);
reduce_impl!([A B C] (Axis<1>, Axis<2>) => [A] keep [A, Const<1>, Const<1>] axes [1 2]);
reduce_impl!([A B C] (Axis<0>, Axis<1>, Axis<2>) => [] keep [Const<1>, Const<1>, Const<1>] axes [0 1 2]);
reduce_impl!([A B C D] Axis<0> => [B C D] keep [Const<1>, B, C, D] axes [0]);
reduce_impl!([A B C D] Axis<1> => [A C D] keep [A, Const<1>, C, D] axes [1]);
reduce_impl!([A B C D] Axis<2> => [A B D] keep [A, B, Const<1>, D] axes [2]);
reduce_impl!([A B C D] Axis<3> => [A B C] keep [A, B, C, Const<1>] axes [3]);
reduce_impl!([A B C D] (Axis<0>, Axis<1>) => [C D] keep [Const<1>, Const<1>, C, D] axes [0 1]);
reduce_impl!([A B C D] (Axis<0>, Axis<2>) => [B D] keep [Const<1>, B, Const<1>, D] axes [0 2]);
reduce_impl!([A B C D] (Axis<0>, Axis<3>) => [B C] keep [Const<1>, B, C, Const<1>] axes [0 3]);
reduce_impl!([A B C D] (Axis<1>, Axis<2>) => [A D] keep [A, Const<1>, Const<1>, D] axes [1 2]);
reduce_impl!([A B C D] (Axis<1>, Axis<3>) => [A C] keep [A, Const<1>, C, Const<1>] axes [1 3]);
reduce_impl!([A B C D] (Axis<2>, Axis<3>) => [A B] keep [A, B, Const<1>, Const<1>] axes [2 3]);
reduce_impl!([A B C D] (Axis<0>, Axis<1>, Axis<2>) => [D] keep [Const<1>, Const<1>, Const<1>, D] axes [0 1 2]);
reduce_impl!([A B C D] (Axis<0>, Axis<1>, Axis<3>) => [C] keep [Const<1>, Const<1>, C, Const<1>] axes [0 1 3]);
reduce_impl!([A B C D] (Axis<0>, Axis<2>, Axis<3>) => [B] keep [Const<1>, B, Const<1>, Const<1>] axes [0 2 3]);
reduce_impl!([A B C D] (Axis<1>, Axis<2>, Axis<3>) => [A] keep [A, Const<1>, Const<1>, Const<1>] axes [1 2 3]);
reduce_impl!([A B C D] (Axis<0>, Axis<1>, Axis<2>, Axis<3>) => [] keep [Const<1>, Const<1>, Const<1>, Const<1>] axes [0 1 2 3]);
reduce_impl!([A B C D E] Axis<0> => [B C D E] keep [Const<1>, B, C, D, E] axes [0]);
reduce_impl!([A B C D E] Axis<1> => [A C D E] keep [A, Const<1>, C, D, E] axes [1]);
reduce_impl!([A B C D E] Axis<2> => [A B D E] keep [A, B, Const<1>, D, E] axes [2]);
reduce_impl!([A B C D E] Axis<3> => [A B C E] keep [A, B, C, Const<1>, E] axes [3]);
reduce_impl!([A B C D E] Axis<4> => [A B C D] keep [A, B, C, D, Const<1>] axes [4]);
reduce_impl!([A B C D E] (Axis<0>, Axis<1>) => [C D E] keep [Const<1>, Const<1>, C, D, E] axes [0 1]);
reduce_impl!([A B C D E] (Axis<0>, Axis<2>) => [B D E] keep [Const<1>, B, Const<1>, D, E] axes [0 2]);
reduce_impl!([A B C D E] (Axis<0>, Axis<3>) => [B C E] keep [Const<1>, B, C, Const<1>, E] axes [0 3]);
reduce_impl!([A B C D E] (Axis<0>, Axis<4>) => [B C D] keep [Const<1>, B, C, D, Const<1>] axes [0 4]);
reduce_impl!([A B C D E] (Axis<1>, Axis<2>) => [A D E] keep [A, Const<1>, Const<1>, D, E] axes [1 2]);
reduce_impl!([A B C D E] (Axis<1>, Axis<3>) => [A C E] keep [A, Const<1>, C, Const<1>, E] axes [1 3]);
reduce_impl!([A B C D E] (Axis<1>, Axis<4>) => [A C D] keep [A, Const<1>, C, D, Const<1>] axes [1 4]);
reduce_impl!([A B C D E] (Axis<2>, Axis<3>) => [A B E] keep [A, B, Const<1>, Const<1>, E] axes [2 3]);
reduce_impl!([A B C D E] (Axis<2>, Axis<4>) => [A B D] keep [A, B, Const<1>, D, Const<1>] axes [2 4]);
reduce_impl!([A B C D E] (Axis<3>, Axis<4>) => [A B C] keep [A, B, C, Const<1>, Const<1>] axes [3 4]);
reduce_impl!([A B C D E] (Axis<0>, Axis<1>, Axis<2>) => [D E] keep [Const<1>, Const<1>, Const<1>, D, E] axes [0 1 2]);
reduce_impl!([A B C D E] (Axis<0>, Axis<1>, Axis<3>) => [C E] keep [Const<1>, Const<1>, C, Const<1>, E] axes [0 1 3]);
reduce_impl!([A B C D E] (Axis<0>, Axis<1>, Axis<4>) => [C D] keep [Const<1>, Const<1>, C, D, Const<1>] axes [0 1 4]);
reduce_impl!([A B C D E] (Axis<0>, Axis<2>, Axis<3>) => [B E] keep [Const<1>, B, Const<1>, Const<1>, E] axes [0 2 3]);
reduce_impl!([A B C D E] (Axis<0>, Axis<2>, Axis<4>) => [B D] keep [Const<1>, B, Const<1>, D, Const<1>] axes [0 2 4]);
reduce_impl!([A B C D E] (Axis<0>, Axis<3>, Axis<4>) => [B C] keep [Const<1>, B, C, Const<1>, Const<1>] axes [0 3 4]);
reduce_impl!([A B C D E] (Axis<1>, Axis<2>, Axis<3>) => [A E] keep [A, Const<1>, Const<1>, Const<1>, E] axes [1 2 3]);
reduce_impl!([A B C D E] (Axis<1>, Axis<2>, Axis<4>) => [A D] keep [A, Const<1>, Const<1>, D, Const<1>] axes [1 2 4]);
reduce_impl!([A B C D E] (Axis<1>, Axis<3>, Axis<4>) => [A C] keep [A, Const<1>, C, Const<1>, Const<1>] axes [1 3 4]);
reduce_impl!([A B C D E] (Axis<2>, Axis<3>, Axis<4>) => [A B] keep [A, B, Const<1>, Const<1>, Const<1>] axes [2 3 4]);
reduce_impl!([A B C D E] (Axis<0>, Axis<1>, Axis<2>, Axis<3>) => [E] keep [Const<1>, Const<1>, Const<1>, Const<1>, E] axes [0 1 2 3]);
reduce_impl!([A B C D E] (Axis<0>, Axis<1>, Axis<2>, Axis<4>) => [D] keep [Const<1>, Const<1>, Const<1>, D, Const<1>] axes [0 1 2 4]);
reduce_impl!([A B C D E] (Axis<0>, Axis<1>, Axis<3>, Axis<4>) => [C] keep [Const<1>, Const<1>, C, Const<1>, Const<1>] axes [0 1 3 4]);
reduce_impl!([A B C D E] (Axis<0>, Axis<2>, Axis<3>, Axis<4>) => [B] keep [Const<1>, B, Const<1>, Const<1>, Const<1>] axes [0 2 3 4]);
reduce_impl!([A B C D E] (Axis<1>, Axis<2>, Axis<3>, Axis<4>) => [A] keep [A, Const<1>, Const<1>, Const<1>, Const<1>] axes [1 2 3 4]);
reduce_impl!([A B C D E] (Axis<0>, Axis<1>, Axis<2>, Axis<3>, Axis<4>) => [] keep [Const<1>, Const<1>, Const<1>, Const<1>, Const<1>] axes [0 1 2 3 4]);
reduce_impl!([A B C D E F] Axis<0> => [B C D E F] keep [Const<1>, B, C, D, E, F] axes [0]);
reduce_impl!([A B C D E F] Axis<1> => [A C D E F] keep [A, Const<1>, C, D, E, F] axes [1]);
reduce_impl!([A B C D E F] Axis<2> => [A B D E F] keep [A, B, Const<1>, D, E, F] axes [2]);
reduce_impl!([A B C D E F] Axis<3> => [A B C E F] keep [A, B, C, Const<1>, E, F] axes [3]);
reduce_impl!([A B C D E F] Axis<4> => [A B C D F] keep [A, B, C, D, Const<1>, F] axes [4]);
reduce_impl!([A B C D E F] Axis<5> => [A B C D E] keep [A, B, C, D, E, Const<1>] axes [5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>) => [C D E F] keep [Const<1>, Const<1>, C, D, E, F] axes [0 1]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<2>) => [B D E F] keep [Const<1>, B, Const<1>, D, E, F] axes [0 2]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<3>) => [B C E F] keep [Const<1>, B, C, Const<1>, E, F] axes [0 3]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<4>) => [B C D F] keep [Const<1>, B, C, D, Const<1>, F] axes [0 4]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<5>) => [B C D E] keep [Const<1>, B, C, D, E, Const<1>] axes [0 5]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<2>) => [A D E F] keep [A, Const<1>, Const<1>, D, E, F] axes [1 2]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<3>) => [A C E F] keep [A, Const<1>, C, Const<1>, E, F] axes [1 3]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<4>) => [A C D F] keep [A, Const<1>, C, D, Const<1>, F] axes [1 4]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<5>) => [A C D E] keep [A, Const<1>, C, D, E, Const<1>] axes [1 5]);
reduce_impl!([A B C D E F] (Axis<2>, Axis<3>) => [A B E F] keep [A, B, Const<1>, Const<1>, E, F] axes [2 3]);
reduce_impl!([A B C D E F] (Axis<2>, Axis<4>) => [A B D F] keep [A, B, Const<1>, D, Const<1>, F] axes [2 4]);
reduce_impl!([A B C D E F] (Axis<2>, Axis<5>) => [A B D E] keep [A, B, Const<1>, D, E, Const<1>] axes [2 5]);
reduce_impl!([A B C D E F] (Axis<3>, Axis<4>) => [A B C F] keep [A, B, C, Const<1>, Const<1>, F] axes [3 4]);
reduce_impl!([A B C D E F] (Axis<3>, Axis<5>) => [A B C E] keep [A, B, C, Const<1>, E, Const<1>] axes [3 5]);
reduce_impl!([A B C D E F] (Axis<4>, Axis<5>) => [A B C D] keep [A, B, C, D, Const<1>, Const<1>] axes [4 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<2>) => [D E F] keep [Const<1>, Const<1>, Const<1>, D, E, F] axes [0 1 2]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<3>) => [C E F] keep [Const<1>, Const<1>, C, Const<1>, E, F] axes [0 1 3]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<4>) => [C D F] keep [Const<1>, Const<1>, C, D, Const<1>, F] axes [0 1 4]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<5>) => [C D E] keep [Const<1>, Const<1>, C, D, E, Const<1>] axes [0 1 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<2>, Axis<3>) => [B E F] keep [Const<1>, B, Const<1>, Const<1>, E, F] axes [0 2 3]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<2>, Axis<4>) => [B D F] keep [Const<1>, B, Const<1>, D, Const<1>, F] axes [0 2 4]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<2>, Axis<5>) => [B D E] keep [Const<1>, B, Const<1>, D, E, Const<1>] axes [0 2 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<3>, Axis<4>) => [B C F] keep [Const<1>, B, C, Const<1>, Const<1>, F] axes [0 3 4]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<3>, Axis<5>) => [B C E] keep [Const<1>, B, C, Const<1>, E, Const<1>] axes [0 3 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<4>, Axis<5>) => [B C D] keep [Const<1>, B, C, D, Const<1>, Const<1>] axes [0 4 5]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<2>, Axis<3>) => [A E F] keep [A, Const<1>, Const<1>, Const<1>, E, F] axes [1 2 3]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<2>, Axis<4>) => [A D F] keep [A, Const<1>, Const<1>, D, Const<1>, F] axes [1 2 4]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<2>, Axis<5>) => [A D E] keep [A, Const<1>, Const<1>, D, E, Const<1>] axes [1 2 5]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<3>, Axis<4>) => [A C F] keep [A, Const<1>, C, Const<1>, Const<1>, F] axes [1 3 4]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<3>, Axis<5>) => [A C E] keep [A, Const<1>, C, Const<1>, E, Const<1>] axes [1 3 5]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<4>, Axis<5>) => [A C D] keep [A, Const<1>, C, D, Const<1>, Const<1>] axes [1 4 5]);
reduce_impl!([A B C D E F] (Axis<2>, Axis<3>, Axis<4>) => [A B F] keep [A, B, Const<1>, Const<1>, Const<1>, F] axes [2 3 4]);
reduce_impl!([A B C D E F] (Axis<2>, Axis<3>, Axis<5>) => [A B E] keep [A, B, Const<1>, Const<1>, E, Const<1>] axes [2 3 5]);
reduce_impl!([A B C D E F] (Axis<2>, Axis<4>, Axis<5>) => [A B D] keep [A, B, Const<1>, D, Const<1>, Const<1>] axes [2 4 5]);
reduce_impl!([A B C D E F] (Axis<3>, Axis<4>, Axis<5>) => [A B C] keep [A, B, C, Const<1>, Const<1>, Const<1>] axes [3 4 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<2>, Axis<3>) => [E F] keep [Const<1>, Const<1>, Const<1>, Const<1>, E, F] axes [0 1 2 3]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<2>, Axis<4>) => [D F] keep [Const<1>, Const<1>, Const<1>, D, Const<1>, F] axes [0 1 2 4]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<2>, Axis<5>) => [D E] keep [Const<1>, Const<1>, Const<1>, D, E, Const<1>] axes [0 1 2 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<3>, Axis<4>) => [C F] keep [Const<1>, Const<1>, C, Const<1>, Const<1>, F] axes [0 1 3 4]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<3>, Axis<5>) => [C E] keep [Const<1>, Const<1>, C, Const<1>, E, Const<1>] axes [0 1 3 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<4>, Axis<5>) => [C D] keep [Const<1>, Const<1>, C, D, Const<1>, Const<1>] axes [0 1 4 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<2>, Axis<3>, Axis<4>) => [B F] keep [Const<1>, B, Const<1>, Const<1>, Const<1>, F] axes [0 2 3 4]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<2>, Axis<3>, Axis<5>) => [B E] keep [Const<1>, B, Const<1>, Const<1>, E, Const<1>] axes [0 2 3 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<2>, Axis<4>, Axis<5>) => [B D] keep [Const<1>, B, Const<1>, D, Const<1>, Const<1>] axes [0 2 4 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<3>, Axis<4>, Axis<5>) => [B C] keep [Const<1>, B, C, Const<1>, Const<1>, Const<1>] axes [0 3 4 5]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<2>, Axis<3>, Axis<4>) => [A F] keep [A, Const<1>, Const<1>, Const<1>, Const<1>, F] axes [1 2 3 4]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<2>, Axis<3>, Axis<5>) => [A E] keep [A, Const<1>, Const<1>, Const<1>, E, Const<1>] axes [1 2 3 5]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<2>, Axis<4>, Axis<5>) => [A D] keep [A, Const<1>, Const<1>, D, Const<1>, Const<1>] axes [1 2 4 5]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<3>, Axis<4>, Axis<5>) => [A C] keep [A, Const<1>, C, Const<1>, Const<1>, Const<1>] axes [1 3 4 5]);
reduce_impl!([A B C D E F] (Axis<2>, Axis<3>, Axis<4>, Axis<5>) => [A B] keep [A, B, Const<1>, Const<1>, Const<1>, Const<1>] axes [2 3 4 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<2>, Axis<3>, Axis<4>) => [F] keep [Const<1>, Const<1>, Const<1>, Const<1>, Const<1>, F] axes [0 1 2 3 4]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<2>, Axis<3>, Axis<5>) => [E] keep [Const<1>, Const<1>, Const<1>, Const<1>, E, Const<1>] axes [0 1 2 3 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<2>, Axis<4>, Axis<5>) => [D] keep [Const<1>, Const<1>, Const<1>, D, Const<1>, Const<1>] axes [0 1 2 4 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<3>, Axis<4>, Axis<5>) => [C] keep [Const<1>, Const<1>, C, Const<1>, Const<1>, Const<1>] axes [0 1 3 4 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<2>, Axis<3>, Axis<4>, Axis<5>) => [B] keep [Const<1>, B, Const<1>, Const<1>, Const<1>, Const<1>] axes [0 2 3 4 5]);
reduce_impl!([A B C D E F] (Axis<1>, Axis<2>, Axis<3>, Axis<4>, Axis<5>) => [A] keep [A, Const<1>, Const<1>, Const<1>, Const<1>, Const<1>] axes [1 2 3 4 5]);
reduce_impl!([A B C D E F] (Axis<0>, Axis<1>, Axis<2>, Axis<3>, Axis<4>, Axis<5>) => [] keep [Const<1>, Const<1>, Const<1>, Const<1>, Const<1>, Const<1>] axes [0 1 2 3 4 5]);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::{Rank1, Rank2, Rank3};

    fn same<A: 'static, B: 'static>() -> bool {
        core::any::TypeId::of::<A>() == core::any::TypeId::of::<B>()
    }

    #[test]
    fn reduce_shapes() {
        assert!(same::<
            <Rank3<2, 3, 4> as ReduceShape<Axis<1>>>::Output,
            Rank2<2, 4>,
        >());
        assert!(same::<
            <Rank3<2, 3, 4> as ReduceShape<(Axis<0>, Axis<2>)>>::Output,
            Rank1<3>,
        >());
        assert!(same::<
            <Rank3<2, 3, 4> as ReduceShape<(Axis<0>, Axis<2>)>>::KeepDim,
            Rank3<1, 3, 1>,
        >());
        assert!(same::<<Rank1<5> as ReduceShape<Axis<0>>>::Output, ()>());
        assert_eq!(
            <Rank3<2, 3, 4> as ReduceShape<(Axis<0>, Axis<2>)>>::REDUCED,
            [true, false, true, false, false, false]
        );
    }
}
