//! Repeating a tensor's elements into a larger shape named in the type: `tile::<Dst>()` (PyTorch's `repeat` /
//! `tile`: the whole tensor laid out again along each axis) and `repeat_interleave::<Ax, Dst>()` (each element
//! repeated in place along one axis). Both are one copy through a layout that reads the input with stride 0 on
//! the repetitions, so every device runs them with its copy kernel; the gradient sums over the repetitions.

use crate::device::Device;
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{Dims, HasAxis, Shape, MAX_RANK};
use crate::tensor::{call, or_panic, written, Tensor};
use core::marker::PhantomData;

/// How the input is read to fill `dst`: for each axis, `(repeats outside, repeats inside)` of the input dim; the
/// layout interleaves them as `[outer repeats, dim, inner repeats]` per axis, dropping the repeats of 1, with
/// stride 0 on the repeats. The flags mark the repetition axes (what the gradient sums over).
fn repeat_layout(
    op: &'static str,
    src: &Layout,
    reps: &[(usize, usize)],
) -> Result<(Layout, [bool; MAX_RANK])> {
    let (mut dims, mut strides, mut flags) = ([0; MAX_RANK], [0; MAX_RANK], [false; MAX_RANK]);
    let mut n = 0;
    for (ax, &(outer, inner)) in reps.iter().enumerate() {
        for (size, stride, repeat) in [
            (outer, 0, true),
            (src.dims()[ax], src.strides()[ax], false),
            (inner, 0, true),
        ] {
            if repeat && size == 1 {
                continue;
            }
            if n == MAX_RANK {
                return Err(Error::InvalidArgument {
                    op,
                    reason: "more than 6 axes with the repeats (repeat fewer axes at a time)",
                });
            }
            (dims[n], strides[n], flags[n]) = (size, stride, repeat);
            n += 1;
        }
    }
    Ok((
        Layout::from_parts(Dims::from_slice(&dims[..n]), &strides[..n], src.offset()),
        flags,
    ))
}

/// The repetitions from `src`'s dims to `dst`'s: `Error::ShapeMismatch` unless each `dst` dim is a multiple of the
/// corresponding `src` one (and equal off `axis` for `repeat_interleave`).
fn repetitions(
    op: &'static str,
    src: &Dims,
    dst: &Dims,
    axis: Option<usize>,
) -> Result<[usize; MAX_RANK]> {
    let mut reps = [1; MAX_RANK];
    let mismatch = || Error::shape_mismatch(op, *src, *dst);
    if src.len() != dst.len() {
        return Err(mismatch());
    }
    for ax in 0..src.len() {
        let (s, d) = (src[ax], dst[ax]);
        let fits = if s == 0 { d == 0 } else { d % s == 0 };
        if !fits || (axis.is_some_and(|a| a != ax) && s != d) {
            return Err(mismatch());
        }
        reps[ax] = d.checked_div(s).unwrap_or(1);
    }
    Ok(reps)
}

/// The build-time check of `tile`: equal ranks, and each static target dim a multiple of the static input dim.
struct TileFits<S, Dst>(PhantomData<(S, Dst)>);
impl<S: Shape, Dst: Shape> TileFits<S, Dst> {
    const OK: () = assert!(
        multiples(
            S::STATIC_DIMS,
            S::RANK,
            Dst::STATIC_DIMS,
            Dst::RANK,
            usize::MAX
        ),
        "tile: the target shape must have the input's rank, each dim a multiple of the input's"
    );
}

/// The build-time check of `repeat_interleave`: like `tile`'s, and the dims off the axis equal.
struct InterleaveFits<S, Ax, Dst>(PhantomData<(S, Ax, Dst)>);
impl<S: HasAxis<Ax>, Ax, Dst: Shape> InterleaveFits<S, Ax, Dst> {
    const OK: () = assert!(
        multiples(S::STATIC_DIMS, S::RANK, Dst::STATIC_DIMS, Dst::RANK, <S as HasAxis<Ax>>::INDEX),
        "repeat_interleave: the target shape must equal the input's except along the axis, where it is a multiple"
    );
}

const fn multiples(
    src: [Option<usize>; MAX_RANK],
    rank: usize,
    dst: [Option<usize>; MAX_RANK],
    dst_rank: usize,
    axis: usize,
) -> bool {
    if rank != dst_rank {
        return false;
    }
    let mut ax = 0;
    while ax < rank {
        if let (Some(s), Some(d)) = (src[ax], dst[ax]) {
            let multiple = if s == 0 { d == 0 } else { d % s == 0 };
            if !multiple || (axis != usize::MAX && ax != axis && s != d) {
                return false;
            }
        }
        ax += 1;
    }
    true
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// One copy of this tensor read through `layout` (the repeat layout) into a dense tensor of `shape`.
    fn repeated<Dst: Shape>(
        &self,
        op: &'static str,
        shape: Dst,
        layout: &Layout,
    ) -> Tensor<T, Dst, D> {
        let src = (self.buffer(), layout);
        // SAFETY: the closure is one kernel call, which writes all of its destination and reads none of it.
        unsafe { written!(Tensor::written_by, shape, op, call::copy::<T, D>(src)) }
    }

    /// The tensor laid out again along each axis to fill `Dst` (PyTorch's `x.repeat(r0, r1, ..)` and `tile`): each
    /// target dim is a multiple of this tensor's, checked at build time for static dims.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i64, _, Cpu>::from_array([[1, 2], [3, 4]]);
    /// let t: Tensor<i64, Rank2<2, 6>, Cpu> = x.tile();
    /// assert_eq!(t.to_array(), [[1, 2, 1, 2, 1, 2], [3, 4, 3, 4, 3, 4]]);
    /// ```
    #[track_caller]
    pub fn tile<Dst: Shape + Default>(&self) -> Tensor<T, Dst, D> {
        let () = TileFits::<S, Dst>::OK;
        or_panic(self.try_tile_with_shape(Dst::default()))
    }

    /// [`Self::tile`] to a shape with runtime dims, returning `Error::ShapeMismatch` when a dim is not a multiple.
    pub fn try_tile_with_shape<Dst: Shape>(&self, dst: Dst) -> Result<Tensor<T, Dst, D>> {
        let () = TileFits::<S, Dst>::OK;
        let (dims, to) = (self.dims(), dst.dims());
        let reps = repetitions("tile", &dims, &to, None)?;
        let pairs: [(usize, usize); MAX_RANK] = core::array::from_fn(|ax| (reps[ax], 1));
        let (layout, _) = repeat_layout("tile", &self.layout(), &pairs[..dims.len()])?;
        Ok(self.repeated("tile", dst, &layout))
    }

    /// Each element repeated in place along `Ax` to fill `Dst` (PyTorch's `repeat_interleave(r, dim)`): `Dst` is
    /// this shape with the axis a multiple of its size.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i64, _, Cpu>::from_array([[1, 2], [3, 4]]);
    /// let r: Tensor<i64, Rank2<2, 6>, Cpu> = x.repeat_interleave::<Axis<1>, _>();
    /// assert_eq!(r.to_array(), [[1, 1, 1, 2, 2, 2], [3, 3, 3, 4, 4, 4]]);
    /// ```
    #[track_caller]
    pub fn repeat_interleave<Ax, Dst: Shape + Default>(&self) -> Tensor<T, Dst, D>
    where
        S: HasAxis<Ax>,
    {
        let () = InterleaveFits::<S, Ax, Dst>::OK;
        or_panic(self.interleave_to(Dst::default(), S::INDEX))
    }

    fn interleave_to<Dst: Shape>(&self, dst: Dst, axis: usize) -> Result<Tensor<T, Dst, D>> {
        let (dims, to) = (self.dims(), dst.dims());
        let reps = repetitions("repeat_interleave", &dims, &to, Some(axis))?;
        let pairs: [(usize, usize); MAX_RANK] = core::array::from_fn(|ax| (1, reps[ax]));
        let (layout, _) = repeat_layout("repeat_interleave", &self.layout(), &pairs[..dims.len()])?;
        Ok(self.repeated("repeat_interleave", dst, &layout))
    }
}

#[cfg(feature = "std")]
mod traced {
    use super::*;
    use crate::autograd::{record_with, Gradients, Slot, Traced};
    use crate::dtype::FloatDType;
    use crate::ops;
    use crate::tensor::{padded_shape, Grad, Padded};

    /// The gradient of a repeat: the output's gradient read as `[outer repeats, dim, inner repeats]` per axis and
    /// summed over the repeats, into the input's dims.
    fn repeat_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        (slot, x_dims, pairs, rank): (Slot, Dims, [(usize, usize); MAX_RANK], usize),
        store: &mut Gradients,
    ) {
        let dense = Layout::contiguous(x_dims);
        let (split, flags) = or_panic(repeat_layout("repeat", &dense, &pairs[..rank]));
        // The dense gradient of the output has exactly the split dims in row-major order.
        let lead = MAX_RANK - split.rank();
        let (mut dims, mut reduced) = ([1; MAX_RANK], [false; MAX_RANK]);
        dims[lead..].copy_from_slice(split.dims());
        reduced[lead..].copy_from_slice(&flags[..split.rank()]);
        let g = g.contiguous();
        let shape: Padded = padded_shape(&Dims::from_slice(&dims));
        let view = Grad::<T, D>::from_view(
            shape,
            Layout::contiguous(Dims::from_slice(&dims)),
            g.storage(),
        );
        let summed = or_panic(view.reduce_with::<_, Padded>(ops::Sum, &reduced, true));
        slot.give_padded(store, summed.relabel(padded_shape(&x_dims)));
    }

    impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
        /// The value tiled to `Dst` (see [`Tensor::tile`]); the gradient sums over the copies.
        #[track_caller]
        pub fn tile<Dst: Shape + Default>(&self) -> Traced<T, Dst, D> {
            let y = self.value.tile::<Dst>();
            let reps = or_panic(repetitions("tile", &self.value.dims(), &y.dims(), None));
            let pairs = core::array::from_fn(|ax| (reps[ax], 1));
            let captured = (self.slot(), self.value.dims(), pairs, S::RANK);
            record_with(y, &[&self.node], captured, repeat_rule::<T, D>)
        }

        /// Each element repeated along `Ax` to fill `Dst` (see [`Tensor::repeat_interleave`]); the gradient sums
        /// over the copies.
        #[track_caller]
        pub fn repeat_interleave<Ax, Dst: Shape + Default>(&self) -> Traced<T, Dst, D>
        where
            S: HasAxis<Ax>,
        {
            let y = self.value.repeat_interleave::<Ax, Dst>();
            let reps = or_panic(repetitions(
                "repeat_interleave",
                &self.value.dims(),
                &y.dims(),
                Some(S::INDEX),
            ));
            let pairs = core::array::from_fn(|ax| (1, reps[ax]));
            let captured = (self.slot(), self.value.dims(), pairs, S::RANK);
            record_with(y, &[&self.node], captured, repeat_rule::<T, D>)
        }
    }
}
