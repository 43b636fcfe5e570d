//! Repeating a tensor's elements into a larger shape named in the type: `tile::<Dst>()` (PyTorch's `repeat` /
//! `tile`: the whole tensor laid out again along each axis) and `repeat_interleave::<Ax, Dst>()` (each element
//! repeated in place along one axis). Both are one copy through a layout that reads the input with stride 0 on
//! the repetitions, so every device runs them with its copy kernel; the gradient sums over the repetitions.
//!
//! That layout has an axis per repetition beside each input axis; axes of size 1 are dropped and neighbours
//! that walk memory as one are merged, so it fits the [`MAX_RANK`] axes a layout holds in all but the widest
//! cases (a rank-4 tensor tiled along 3 or 4 axes of sizes above 1). Those gather by the flat source position
//! of each output element instead: an index as large as the output, built on the host, and the device's gather
//! kernel.

use crate::dtype::{IndexDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::size_check::{self, n, of, t, PanicVal, StaticShape};
use crate::shape::{ConstShape, Dims, HasAxis, Shape, MAX_RANK};
use crate::tensor::{call, check_output, or_panic, written, Tensor};
use core::marker::PhantomData;

/// A strided walk of up to three axes per input axis, simplified as it is built: axes of size 1 are left out,
/// and an axis is merged into the one before it when the two walk memory as one axis (the outer stride is the
/// inner size times the inner stride: a run of repetitions, or of dense input) and are both repetitions or both
/// input.
struct RepeatWalk {
    axes: [(usize, usize, bool); 3 * MAX_RANK],
    n: usize,
}

impl RepeatWalk {
    /// The walk of `dims`/`strides` with each axis read `[outer repeats, dim, inner repeats]` times (`reps[ax]`
    /// is `(outer, inner)`), stride 0 on the repeats.
    fn new(dims: &[usize], strides: &[usize], reps: &[(usize, usize)]) -> Self {
        let mut walk = RepeatWalk {
            axes: [(0, 0, false); 3 * MAX_RANK],
            n: 0,
        };
        for (ax, &(outer, inner)) in reps.iter().enumerate() {
            walk.push(outer, 0, true);
            walk.push(dims[ax], strides[ax], false);
            walk.push(inner, 0, true);
        }
        walk
    }

    fn push(&mut self, size: usize, stride: usize, repeat: bool) {
        if size == 1 {
            return;
        }
        if let Some(last) = self.n.checked_sub(1).map(|i| &mut self.axes[i])
            && last.2 == repeat
            && last.1 == size * stride
        {
            *last = (last.0 * size, stride, repeat);
            return;
        }
        self.axes[self.n] = (size, stride, repeat);
        self.n += 1;
    }

    /// The walk as a layout from `offset`, with the repetition axes marked (what the gradient sums over); `None`
    /// when it has more axes than a layout holds.
    fn layout(&self, offset: usize) -> Option<(Layout, [bool; MAX_RANK])> {
        if self.n > MAX_RANK {
            return None;
        }
        let (mut dims, mut strides, mut flags) = ([0; MAX_RANK], [0; MAX_RANK], [false; MAX_RANK]);
        for (i, &(d, s, f)) in self.axes[..self.n].iter().enumerate() {
            (dims[i], strides[i], flags[i]) = (d, s, f);
        }
        let layout = Layout::from_parts(
            Dims::from_slice(&dims[..self.n]),
            &strides[..self.n],
            offset,
        );
        Some((layout, flags))
    }
}

/// How `src` is read to fill the output of the repetitions `reps` (per axis `(outer, inner)`): the repeat
/// layout and its repetition axes, or `None` when it needs more axes than a layout holds.
fn repeat_layout(src: &Layout, reps: &[(usize, usize)]) -> Option<(Layout, [bool; MAX_RANK])> {
    RepeatWalk::new(src.dims(), src.strides(), reps).layout(src.offset())
}

/// Per axis `(outer, inner)` repetitions; axes past the rank hold `(1, 1)`.
type RepeatPairs = [(usize, usize); MAX_RANK];

/// How `src`'s dims repeat into `dst`'s, per axis `(outer, inner)`: `tile` repeats whole (outer), and
/// `repeat_interleave` (`axis` given) repeats each element in place (inner). `Error::ShapeMismatch` unless each
/// `dst` dim is a multiple of the corresponding `src` one (and equal off `axis` for `repeat_interleave`).
fn repeat_pairs(
    op: &'static str,
    src: &Dims,
    dst: &Dims,
    axis: Option<usize>,
) -> Result<RepeatPairs> {
    let mut pairs = [(1, 1); MAX_RANK];
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
        let r = d.checked_div(s).unwrap_or(1);
        pairs[ax] = if axis.is_some() { (1, r) } else { (r, 1) };
    }
    Ok(pairs)
}

/// The build-time check of `tile`: equal ranks, and each static target dim a multiple of the static input dim.
struct TileFits<S, Dst>(PhantomData<(S, Dst)>);
impl<S: Shape, Dst: Shape> TileFits<S, Dst> {
    const OK: () = multiples("tile", of::<S>(), of::<Dst>(), None);
}

/// The build-time check of `repeat_interleave`: like `tile`'s, and the dims off the axis equal.
struct InterleaveFits<S, Ax, Dst>(PhantomData<(S, Ax, Dst)>);
impl<S: HasAxis<Ax>, Ax, Dst: Shape> InterleaveFits<S, Ax, Dst> {
    const OK: () = multiples(
        "repeat_interleave",
        of::<S>(),
        of::<Dst>(),
        Some(<S as HasAxis<Ax>>::INDEX),
    );
}

/// The panic of [`multiples`]: `why` the target is not a repeat of the input.
const fn not_a_repeat(op: &str, (src, dst): (StaticShape, StaticShape), why: &[PanicVal<'_>]) -> ! {
    size_check::concat_panic(&[
        &[t(op), t(": the target ")],
        &size_check::shape(dst.0, dst.1),
        &[t(" does not repeat the input ")],
        &size_check::shape(src.0, src.1),
        why,
    ])
}

/// Panics unless the target `dst` has the input's rank and each static dim a multiple of the input's; with an
/// `axis` (`repeat_interleave`), the dims off it equal.
const fn multiples(
    op: &str,
    (src, rank): StaticShape,
    (dst, dst_rank): StaticShape,
    axis: Option<usize>,
) {
    let shapes = ((src, rank), (dst, dst_rank));
    if rank != dst_rank {
        not_a_repeat(op, shapes, &[t(": the ranks differ")]);
    }
    let mut ax = 0;
    while ax < rank {
        if let (Some(s), Some(d)) = (src[ax], dst[ax]) {
            let multiple = if s == 0 { d == 0 } else { d % s == 0 };
            let off_axis = matches!(axis, Some(a) if a != ax);
            if off_axis && s != d {
                not_a_repeat(op, shapes, &[t(": axis "), n(ax), t(" must stay "), n(s)]);
            }
            if !multiple {
                let why = [
                    t(": axis "),
                    n(ax),
                    t(" has "),
                    n(d),
                    t(", not a multiple of "),
                    n(s),
                ];
                not_a_repeat(op, shapes, &why);
            }
        }
        ax += 1;
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// This tensor repeated by `reps` (per axis `(outer, inner)`) into a dense tensor of `shape`:
    /// `Error::ShapeOverflow` when the output is too large to address.
    fn repeated<Dst: Shape>(
        &self,
        op: &'static str,
        shape: Dst,
        reps: &[(usize, usize)],
    ) -> Result<Tensor<T, Dst, D>> {
        check_output::<T>(op, &shape.dims())?;
        let Some((layout, _)) = repeat_layout(&self.layout(), reps) else {
            let n = self.numel();
            // u32 positions when every one fits (on a 32-bit target, always).
            return Ok(if u32::try_from(n.saturating_sub(1)).is_ok() {
                self.repeated_by_gather::<Dst, u32>(op, shape, reps)
            } else {
                self.repeated_by_gather::<Dst, i64>(op, shape, reps)
            });
        };
        let src = (self.buffer(), &layout);
        Ok(written!(
            Tensor::written_by,
            shape,
            op,
            call::copy::<T, D>(src)
        ))
    }

    /// [`Self::repeated`] when the repeat layout has too many axes: output element `o` is the dense input's
    /// element at the flat position `index[o]`, which holds every position as an `I`.
    fn repeated_by_gather<Dst: Shape, I: IndexDType>(
        &self,
        op: &'static str,
        shape: Dst,
        reps: &[(usize, usize)],
    ) -> Tensor<T, Dst, D> {
        let dense = self.contiguous();
        let dims = dense.dims();
        let out = shape.dims();
        let index = Tensor::<I, Dst, D>::filled_with(op, shape, &mut |index: &mut [I]| {
            // The output's coordinates, row-major, and the input's coordinate of each: (o / inner) % dim.
            let mut at = [0usize; MAX_RANK];
            for slot in index.iter_mut() {
                let mut flat = 0;
                for ax in 0..dims.len() {
                    flat = flat * dims[ax] + (at[ax] / reps[ax].1) % dims[ax];
                }
                *slot = I::from_f64(flat as f64); // exact: below 2^53, as any buffer's length
                for ax in (0..out.len()).rev() {
                    at[ax] += 1;
                    if at[ax] < out[ax] {
                        break;
                    }
                    at[ax] = 0;
                }
            }
        });
        let flat_src = Layout::from_parts(
            Dims::from_slice(&[dims.numel()]),
            &[1],
            dense.layout().offset(),
        );
        let flat_out = Layout::contiguous(Dims::from_slice(&[out.numel()]));
        let (src, idx) = ((dense.buffer(), &flat_src), (index.buffer(), &flat_out));
        written!(
            Tensor::written_by,
            shape,
            op,
            call::gather::<T, I, D>(op, src, idx, 0)
        )
    }

    /// The tensor laid out again along each axis to fill `Dst` (PyTorch's `x.repeat(r0, r1, ..)` and `tile`): each
    /// target dim is a multiple of this tensor's, checked at build time. `Dst`'s dims must be static (a
    /// [`ConstShape`] bound); a target with runtime-sized dims is given as a value to
    /// [`Self::try_tile_with_shape`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i64, _, Cpu>::from_array([[1, 2], [3, 4]]);
    /// let t: Tensor<i64, Rank2<2, 6>, Cpu> = x.tile();
    /// assert_eq!(t.to_array(), [[1, 2, 1, 2, 1, 2], [3, 4, 3, 4, 3, 4]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::join_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i64, Rank2<2, 3>, Cpu>::zeros();
    /// let t: Tensor<i64, Rank2<4, 8>, Cpu> = x.tile(); // 8 is not a multiple of 3
    /// ```
    #[track_caller]
    pub fn tile<Dst: ConstShape>(&self) -> Tensor<T, Dst, D> {
        let () = TileFits::<S, Dst>::OK;
        or_panic(self.try_tile_with_shape(Dst::default()))
    }

    /// [`Self::tile`] to `dst`, whose runtime-sized dims are given here: `Error::ShapeMismatch` when a dim is not
    /// a multiple of this tensor's, `Error::ShapeOverflow` when the result is too large to address.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<u8, _, Cpu>::from_array([[1, 2]]);
    /// let t = x.try_tile_with_shape((3usize, 4usize)).unwrap();
    /// assert_eq!(t.to_vec(), [1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2]);
    /// assert!(x.try_tile_with_shape((3usize, 5usize)).is_err()); // 5 is not a multiple of 2
    /// ```
    pub fn try_tile_with_shape<Dst: Shape>(&self, dst: Dst) -> Result<Tensor<T, Dst, D>> {
        Ok(self.tiled(dst)?.0)
    }

    /// The forward of `tile`, shared with the traced form, which keeps the repetitions for its gradient.
    fn tiled<Dst: Shape>(&self, dst: Dst) -> Result<(Tensor<T, Dst, D>, RepeatPairs)> {
        let () = TileFits::<S, Dst>::OK;
        let pairs = repeat_pairs("tile", &self.dims(), &dst.dims(), None)?;
        Ok((self.repeated("tile", dst, &pairs[..S::RANK])?, pairs))
    }

    /// Each element repeated in place along `Ax` to fill `Dst` (PyTorch's `repeat_interleave(r, dim)`): `Dst` is
    /// this shape with the axis a multiple of its size. `Dst`'s dims must be static (a [`ConstShape`] bound); see
    /// [`Self::try_repeat_interleave_with_shape`] for a target with runtime-sized dims.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i64, _, Cpu>::from_array([[1, 2], [3, 4]]);
    /// let r: Tensor<i64, Rank2<2, 6>, Cpu> = x.repeat_interleave::<Axis<1>, _>();
    /// assert_eq!(r.to_array(), [[1, 1, 1, 2, 2, 2], [3, 3, 3, 4, 4, 4]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::join_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i64, Rank2<2, 2>, Cpu>::zeros();
    /// // Off the repeated axis the shape stays: 2 rows, not 3.
    /// let r: Tensor<i64, Rank2<3, 6>, Cpu> = x.repeat_interleave::<Axis<1>, _>();
    /// ```
    #[track_caller]
    pub fn repeat_interleave<Ax, Dst: ConstShape>(&self) -> Tensor<T, Dst, D>
    where
        S: HasAxis<Ax>,
    {
        let () = InterleaveFits::<S, Ax, Dst>::OK;
        or_panic(self.try_repeat_interleave_with_shape::<Ax, Dst>(Dst::default()))
    }

    /// [`Self::repeat_interleave`] to `dst`, whose runtime-sized dims are given here: `Error::ShapeMismatch` when
    /// `dst` differs from this shape off the axis or its size there is not a multiple, `Error::ShapeOverflow`
    /// when the result is too large to address.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<u8, (usize,), Cpu>::from_slice_with_shape((2,), &[1, 2]).unwrap();
    /// let r = x.try_repeat_interleave_with_shape::<Axis<0>, _>((6usize,)).unwrap();
    /// assert_eq!(r.to_vec(), [1, 1, 1, 2, 2, 2]);
    /// ```
    pub fn try_repeat_interleave_with_shape<Ax, Dst: Shape>(
        &self,
        dst: Dst,
    ) -> Result<Tensor<T, Dst, D>>
    where
        S: HasAxis<Ax>,
    {
        Ok(self.interleaved::<Ax, Dst>(dst)?.0)
    }

    /// The forward of `repeat_interleave`, shared with the traced form, which keeps the repetitions for its
    /// gradient.
    fn interleaved<Ax, Dst: Shape>(&self, dst: Dst) -> Result<(Tensor<T, Dst, D>, RepeatPairs)>
    where
        S: HasAxis<Ax>,
    {
        let () = InterleaveFits::<S, Ax, Dst>::OK;
        let op = "repeat_interleave";
        let pairs = repeat_pairs(op, &self.dims(), &dst.dims(), Some(S::INDEX))?;
        Ok((self.repeated(op, dst, &pairs[..S::RANK])?, pairs))
    }
}

#[cfg(feature = "std")]
mod traced {
    use super::*;
    use crate::autograd::{record_with, Gradients, Slot, Traced};
    use crate::dtype::FloatDType;
    use crate::ops;
    use crate::tensor::{padded_shape, Grad, Padded};

    /// The gradient of a repeat: the output's gradient summed over the repetitions, into the input's dims. The
    /// dense gradient read as `[outer repeats, dim, inner repeats]` per axis is one reduction where that walk fits
    /// a layout, else one per repeated axis (each walk then has at most five axes).
    fn repeat_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        (slot, x_dims, pairs, rank): (Slot, Dims, [(usize, usize); MAX_RANK], usize),
        store: &mut Gradients,
    ) {
        let mut g = g.contiguous();
        let mut dims = x_dims;
        for (d, (outer, inner)) in dims.as_mut_slice().iter_mut().zip(pairs) {
            *d *= outer * inner;
        }
        if let Some(summed) = sum_repeats(&g, &x_dims, &pairs[..rank]) {
            return slot.give_padded(store, summed);
        }
        for ax in 0..rank {
            if pairs[ax] == (1, 1) {
                continue;
            }
            // The gradient so far is the repeat of `reduced` along this one axis (the axes before it are summed
            // already, the ones after it not yet).
            let mut one = [(1, 1); MAX_RANK];
            one[ax] = pairs[ax];
            let mut reduced = dims;
            reduced.as_mut_slice()[ax] = x_dims[ax];
            g = sum_repeats(&g, &reduced, &one[..rank])
                .expect("one repeated axis walks in at most five axes");
            dims = reduced;
        }
        slot.give_padded(store, g);
    }

    /// The dense gradient `g` of the repeat `pairs` of a tensor of dims `x_dims`, summed over the repetitions into
    /// a dense gradient of `x_dims`; `None` when the walk has more axes than a layout holds.
    fn sum_repeats<T: FloatDType, D: Device>(
        g: &Grad<T, D>,
        x_dims: &Dims,
        pairs: &[(usize, usize)],
    ) -> Option<Grad<T, D>> {
        let (split, flags) = repeat_layout(&Layout::contiguous(*x_dims), pairs)?;
        // The dense gradient of the output has exactly the split dims in row-major order.
        let lead = MAX_RANK - split.rank();
        let (mut dims, mut reduced) = ([1; MAX_RANK], [false; MAX_RANK]);
        dims[lead..].copy_from_slice(split.dims());
        reduced[lead..].copy_from_slice(&flags[..split.rank()]);
        let shape: Padded = padded_shape(&Dims::from_slice(&dims));
        let view = Grad::<T, D>::from_view(
            shape,
            Layout::contiguous(Dims::from_slice(&dims)),
            g.storage(),
        );
        let summed = or_panic(view.reduce_with::<_, Padded>(ops::Sum, &reduced, true));
        Some(summed.relabel(padded_shape(x_dims)))
    }

    impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
        /// The value tiled to `Dst` (see [`Tensor::tile`]); the gradient sums over the copies.
        #[track_caller]
        pub fn tile<Dst: ConstShape>(&self) -> Traced<T, Dst, D> {
            let () = TileFits::<S, Dst>::OK;
            or_panic(self.try_tile_with_shape(Dst::default()))
        }

        /// [`Self::tile`] to `dst`, whose runtime-sized dims are given here (see
        /// [`Tensor::try_tile_with_shape`]).
        pub fn try_tile_with_shape<Dst: Shape>(&self, dst: Dst) -> Result<Traced<T, Dst, D>> {
            let (y, pairs) = self.value.tiled(dst)?;
            let captured = (self.slot(), self.value.dims(), pairs, S::RANK);
            Ok(record_with(y, &[&self.node], captured, repeat_rule::<T, D>))
        }

        /// Each element repeated along `Ax` to fill `Dst` (see [`Tensor::repeat_interleave`]); the gradient sums
        /// over the copies.
        #[track_caller]
        pub fn repeat_interleave<Ax, Dst: ConstShape>(&self) -> Traced<T, Dst, D>
        where
            S: HasAxis<Ax>,
        {
            let () = InterleaveFits::<S, Ax, Dst>::OK;
            or_panic(self.try_repeat_interleave_with_shape::<Ax, Dst>(Dst::default()))
        }

        /// [`Self::repeat_interleave`] to `dst`, whose runtime-sized dims are given here (see
        /// [`Tensor::try_repeat_interleave_with_shape`]).
        pub fn try_repeat_interleave_with_shape<Ax, Dst: Shape>(
            &self,
            dst: Dst,
        ) -> Result<Traced<T, Dst, D>>
        where
            S: HasAxis<Ax>,
        {
            let (y, pairs) = self.value.interleaved::<Ax, Dst>(dst)?;
            let captured = (self.slot(), self.value.dims(), pairs, S::RANK);
            Ok(record_with(y, &[&self.node], captured, repeat_rule::<T, D>))
        }
    }
}
