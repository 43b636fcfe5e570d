//! `flatten` and `unflatten` of a range of axes (PyTorch's `flatten(start_dim, end_dim)` and
//! `unflatten(dim, sizes)`): reshapes whose result type the caller names (stable Rust cannot multiply dims in a
//! type; `_` lets the annotation pick it), checked at build time to be exactly the merge or split asked for, not
//! any reshape of the same element count. Free on contiguous tensors, like `reshape`.

use crate::dtype::WithDType;
use crate::ops::Device;
use crate::shape::size_check::{self, n, of, t, PanicVal, StaticShape};
use crate::shape::{numel_static_eq, ConstShape, HasAxis, Shape, MAX_RANK};
use crate::tensor::Tensor;
use core::marker::PhantomData;

/// The product of `dims[from..to]`, `None` when one of them is runtime-sized.
const fn product(dims: [Option<usize>; MAX_RANK], from: usize, to: usize) -> Option<usize> {
    let (mut p, mut i) = (1, from);
    while i < to {
        match dims[i] {
            Some(d) => p *= d,
            None => return None,
        }
        i += 1;
    }
    Some(p)
}

/// Whether `merged` is `split` with axes `start..=end` of `split` merged into axis `start` of `merged` (static
/// dims compared; a runtime one passes).
const fn merges(
    (split, split_rank): StaticShape,
    (merged, merged_rank): StaticShape,
    start: usize,
    end: usize,
) -> bool {
    if end < start || end >= split_rank || merged_rank != split_rank - (end - start) {
        return false;
    }
    let mut i = 0;
    while i < start {
        if !numel_static_eq(split[i], merged[i]) {
            return false;
        }
        i += 1;
    }
    let mut i = end + 1;
    while i < split_rank {
        if !numel_static_eq(split[i], merged[i - (end - start)]) {
            return false;
        }
        i += 1;
    }
    numel_static_eq(product(split, start, end + 1), merged[start])
}

/// Panics, showing both shapes, unless `merged` is `split` with axes `start..=end` merged (`flatten`, whose
/// input is `split`) or split back (`unflatten`, whose input is `merged`).
const fn check_merge(
    flatten: bool,
    split: StaticShape,
    merged: StaticShape,
    start: usize,
    end: usize,
) {
    if merges(split, merged, start, end) {
        return;
    }
    let op = if flatten { "flatten" } else { "unflatten" };
    let (input, output) = if flatten {
        (split, merged)
    } else {
        (merged, split)
    };
    let what: &[PanicVal<'_>] = if flatten {
        &[
            t(": merging axes "),
            n(start),
            t("..="),
            n(end),
            t(" of the input "),
        ]
    } else {
        &[t(": splitting axis "), n(start), t(" of the input ")]
    };
    size_check::concat_panic(&[
        &[t(op)],
        what,
        &size_check::shape(input.0, input.1),
        &[t(" cannot give the output type ")],
        &size_check::shape(output.0, output.1),
        &[t(
            " (the merged dim is the product of the axes it replaces)",
        )],
    ]);
}

struct FlattenFits<S, Start, End, Dst>(PhantomData<(S, Start, End, Dst)>);
impl<S: HasAxis<Start> + HasAxis<End>, Start, End, Dst: ConstShape>
    FlattenFits<S, Start, End, Dst>
{
    const OK: () = check_merge(
        true,
        of::<S>(),
        of::<Dst>(),
        <S as HasAxis<Start>>::INDEX,
        <S as HasAxis<End>>::INDEX,
    );
}

struct UnflattenFits<S, Ax, Dst>(PhantomData<(S, Ax, Dst)>);
impl<S: HasAxis<Ax>, Ax, Dst: ConstShape> UnflattenFits<S, Ax, Dst> {
    const OK: () = check_merge(
        false,
        of::<Dst>(),
        of::<S>(),
        <S as HasAxis<Ax>>::INDEX,
        (<S as HasAxis<Ax>>::INDEX + Dst::RANK).saturating_sub(S::RANK),
    );
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Axes `Start..=End` merged into one (PyTorch's `flatten(start_dim, end_dim)`); the result type names the
    /// merged size.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<2, 3, 4, 5>, Cpu> = Tensor::arange();
    /// let y: Tensor<f32, Rank2<2, 60>, Cpu> = x.flatten::<Axis<1>, Axis<3>, _>();
    /// let z: Tensor<f32, Rank3<2, 12, 5>, Cpu> = x.flatten::<Axis<1>, Axis<2>, _>();
    /// let back: Tensor<f32, Rank4<2, 3, 4, 5>, Cpu> = z.unflatten::<Axis<1>, _>();
    /// assert_eq!((y.to_vec(), back.to_vec()), (x.to_vec(), x.to_vec()));
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::view_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<2, 3, 4, 5>, Cpu> = Tensor::zeros();
    /// // Axes 1..=2 merge into 3·4 = 12, not 15.
    /// let y: Tensor<f32, Rank3<2, 15, 5>, Cpu> = x.flatten::<Axis<1>, Axis<2>, _>();
    /// ```
    #[track_caller]
    pub fn flatten<Start, End, Dst: ConstShape>(&self) -> Tensor<T, Dst, D>
    where
        S: HasAxis<Start> + HasAxis<End>,
    {
        let () = FlattenFits::<S, Start, End, Dst>::OK;
        self.reshape()
    }

    /// Axis `Ax` split into several (PyTorch's `unflatten(dim, sizes)`): the result type names the new dims,
    /// whose product is the axis's size.
    #[track_caller]
    pub fn unflatten<Ax, Dst: ConstShape>(&self) -> Tensor<T, Dst, D>
    where
        S: HasAxis<Ax>,
    {
        let () = UnflattenFits::<S, Ax, Dst>::OK;
        self.reshape()
    }
}

#[cfg(feature = "std")]
mod traced {
    use super::*;
    use crate::autograd::Traced;
    use crate::dtype::FloatDType;

    impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
        /// See [`Tensor::flatten`]; the gradient is reshaped back.
        #[track_caller]
        pub fn flatten<Start, End, Dst: ConstShape>(&self) -> Traced<T, Dst, D>
        where
            S: HasAxis<Start> + HasAxis<End>,
        {
            let () = FlattenFits::<S, Start, End, Dst>::OK;
            self.reshape()
        }

        /// See [`Tensor::unflatten`]; the gradient is reshaped back.
        #[track_caller]
        pub fn unflatten<Ax, Dst: ConstShape>(&self) -> Traced<T, Dst, D>
        where
            S: HasAxis<Ax>,
        {
            let () = UnflattenFits::<S, Ax, Dst>::OK;
            self.reshape()
        }
    }
}
