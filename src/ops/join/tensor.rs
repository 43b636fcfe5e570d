//! Joining and splitting along typed axes: `cat`, `stack`, `split`, `flip`, `roll`, `pad`.
//!
//! Stable Rust cannot compute `Const<{A + B}>`, so ops whose output size is a sum name it (`cat::<Ax, OUT, _>`,
//! `pad::<Ax, BEFORE, AFTER, OUT>`) and a `const` assertion checks the arithmetic at build time.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let a = Tensor::<f32, _, Cpu>::from_array([[1., 2.], [3., 4.]]);
//! let b = Tensor::<f32, _, Cpu>::from_array([[5., 6.]]);
//! let c: Tensor<f32, Rank2<3, 2>, Cpu> = a.cat::<Axis<0>, 3, _>(&b);
//! assert_eq!(c.to_array(), [[1., 2.], [3., 4.], [5., 6.]]);
//! let s: Tensor<f32, Rank3<2, 2, 2>, Cpu> = Tensor::stack::<Axis<0>, 2>(&[a.clone(), a.t()]);
//! assert_eq!(s.to_array()[1], [[1., 3.], [2., 4.]]);
//! let [first, _, last] = c.split::<Axis<0>, 1, 3>(); // views, no copy
//! assert_eq!((first.to_vec(), last.to_vec()), (vec![1., 2.], vec![5., 6.]));
//! assert_eq!(a.flip::<Axis<1>>().to_array(), [[2., 1.], [4., 3.]]);
//! assert_eq!(a.roll::<Axis<0>>(1).to_array(), [[3., 4.], [1., 2.]]);
//! let p: Tensor<f32, Rank2<2, 5>, Cpu> = a.pad::<Axis<1>, 1, 2, 5>();
//! assert_eq!(p.to_array()[0], [0., 1., 2., 0., 0.]);
//! ```

use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{AgreeExceptAxis, Const, Dim, HasAxis, InsertAxis, Shape, MAX_RANK};
use crate::tensor::{call, written};
use crate::tensor::{check_output, device_ok, or_panic, Tensor};
use core::marker::PhantomData;

pub(super) fn shape_of<S: Shape>(op: &'static str, dims: &[usize]) -> S {
    S::from_dims(dims).unwrap_or_else(|| {
        panic!("{op}: internal error: dims {dims:?} disagree with the output type")
    })
}

/// What [`Tensor::split`] returns: `N` views of `LEN` entries along `Ax`.
type Pieces<T, S, Ax, D, const LEN: usize, const N: usize> =
    [Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>; N];

/// The build-time checks of static sizes, one associated `const` each: the panicking op and its `try_` twin both
/// name it, so a failing check is reported once, at the user's call.
struct CatSizes<S, S2, Ax, const OUT: usize>(PhantomData<(S, S2, Ax)>);
impl<S: AgreeExceptAxis<S2, Ax>, S2: Shape, Ax, const OUT: usize> CatSizes<S, S2, Ax, OUT> {
    const OK: () = if let (Some(a), Some(b)) = (S::STATIC_DIMS[S::INDEX], S2::STATIC_DIMS[S::INDEX])
    {
        size_check::output_is(
            "cat",
            "size along the axis",
            &[n(a), t(" + "), n(b)],
            a + b,
            OUT,
        );
    };
}

pub(super) struct SplitTiles<S, Ax, const LEN: usize, const N: usize>(PhantomData<(S, Ax)>);
impl<S: HasAxis<Ax>, Ax, const LEN: usize, const N: usize> SplitTiles<S, Ax, LEN, N> {
    pub(super) const OK: () = if let Some(size) = <<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE
        && LEN * N != size
    {
        size_check::fail(
            "split",
            &[
                t("LEN · N = "),
                n(LEN),
                t(" · "),
                n(N),
                t(" = "),
                n(LEN * N),
                t(" must equal the size of the axis, "),
                n(size),
            ],
        );
    };
}

pub(super) struct PadSizes<S, Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
    PhantomData<(S, Ax)>,
);
impl<S: HasAxis<Ax>, Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>
    PadSizes<S, Ax, BEFORE, AFTER, OUT>
{
    pub(super) const OK: () = if let Some(size) = <<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE {
        size_check::output_is(
            "pad",
            "size along the axis",
            &[n(BEFORE), t(" + "), n(size), t(" + "), n(AFTER)],
            BEFORE + size + AFTER,
            OUT,
        );
    } else if BEFORE + AFTER > OUT {
        size_check::fail(
            "pad",
            &[
                t("OUT = "),
                n(OUT),
                t(" is less than BEFORE + AFTER = "),
                n(BEFORE + AFTER),
            ],
        );
    };
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `self` then `other` along `Ax`; `OUT` is the joined size (a `const` assertion for static dims). Panics
    /// when runtime-sized dims disagree; see [`Self::try_cat`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, _, Cpu>::from_array([[1., 2.], [3., 4.]]);
    /// let b = Tensor::<f32, _, Cpu>::from_array([[5.], [6.]]);
    /// let c: Tensor<f32, Rank2<2, 3>, Cpu> = a.cat::<Axis<1>, 3, _>(&b);
    /// assert_eq!(c.to_array(), [[1., 2., 5.], [3., 4., 6.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::join_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, Rank2<2, 2>, Cpu>::zeros();
    /// let b = Tensor::<f32, Rank2<2, 1>, Cpu>::zeros();
    /// // "cat: size along the axis 2 + 1 = 3, but the output type says 4".
    /// let c = a.cat::<Axis<1>, 4, _>(&b);
    /// ```
    #[track_caller]
    pub fn cat<Ax, const OUT: usize, S2: Shape>(
        &self,
        other: &Tensor<T, S2, D>,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: AgreeExceptAxis<S2, Ax>,
    {
        let () = CatSizes::<S, S2, Ax, OUT>::OK;
        or_panic(self.cat_checked::<Ax, OUT, S2>(other))
    }

    /// [`Self::cat`], returning `Error::ShapeMismatch` when runtime-sized dims off the axis disagree and
    /// `Error::AxisSize` when the two sizes along it do not add up to `OUT`.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, (usize, Const<2>), Cpu>::zeros_with_shape((2, Const));
    /// let b = Tensor::<f32, (usize, Const<2>), Cpu>::zeros_with_shape((3, Const));
    /// assert_eq!(a.try_cat::<Axis<0>, 5, _>(&b).unwrap().dims().to_vec(), [5, 2]);
    /// let err = a.try_cat::<Axis<0>, 4, _>(&b).unwrap_err();
    /// assert_eq!(err.to_string(), "cat: axis 0 has size 5, expected 4");
    /// ```
    pub fn try_cat<Ax, const OUT: usize, S2: Shape>(
        &self,
        other: &Tensor<T, S2, D>,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>>
    where
        S: AgreeExceptAxis<S2, Ax>,
    {
        let () = CatSizes::<S, S2, Ax, OUT>::OK;
        self.cat_checked::<Ax, OUT, S2>(other)
    }

    fn cat_checked<Ax, const OUT: usize, S2: Shape>(
        &self,
        other: &Tensor<T, S2, D>,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>>
    where
        S: AgreeExceptAxis<S2, Ax>,
    {
        super::concat::concat_checked::<Ax, OUT, _>("cat", &(self, other))
    }

    /// `N` tensors of one shape joined along a new axis at `Ax`. Panics when runtime-sized dims disagree; see
    /// [`Self::try_stack`].
    #[track_caller]
    pub fn stack<Ax, const N: usize>(
        parts: &[Self; N],
    ) -> Tensor<T, <S as InsertAxis<Ax>>::Output<Const<N>>, D>
    where
        S: InsertAxis<Ax>,
    {
        or_panic(Self::try_stack::<Ax, N>(parts))
    }

    /// [`Self::stack`], returning `Error::ShapeMismatch` (the first shape and the first that differs) when
    /// runtime-sized dims disagree.
    pub fn try_stack<Ax, const N: usize>(
        parts: &[Self; N],
    ) -> Result<Tensor<T, <S as InsertAxis<Ax>>::Output<Const<N>>, D>>
    where
        S: InsertAxis<Ax>,
    {
        assert!(N > 0, "stack: needs at least one tensor");
        let axis = <S as InsertAxis<Ax>>::INDEX;
        let first = parts[0].dims();
        if let Some(other) = parts.iter().find(|p| p.dims() != first) {
            return Err(Error::shape_mismatch("stack", first, other.dims()));
        }
        let layouts: [Layout; N] = core::array::from_fn(|i| parts[i].layout().unsqueeze(axis));
        let mut out = *layouts[0].dims();
        out.as_mut_slice()[axis] = N;
        check_output::<T>("stack", &out)?;
        let views: [(&D::Buffer<T>, &Layout); N] =
            core::array::from_fn(|i| (parts[i].buffer(), &layouts[i]));
        written!(
            Tensor::try_written_by,
            shape_of("stack", &out),
            "stack",
            call::concat::<T, D>(&views, axis),
        )
    }

    /// `N` consecutive views of `LEN` entries along `Ax` (no copy); `LEN * N` must cover the axis exactly (a
    /// `const` assertion for a static axis; a runtime-sized one panics, see [`Self::try_split`]). This is both
    /// PyTorch's `split(LEN)` and its `chunk(N)`, with both counts in the type.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank1<6>, Cpu> = Tensor::arange();
    /// let [x, y, z] = a.split::<Axis<0>, 2, 3>();
    /// assert_eq!((x.to_array(), y.to_array(), z.to_array()), ([0., 1.], [2., 3.], [4., 5.]));
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::join_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank1<5>, Cpu> = Tensor::arange();
    /// let [x, y] = a.split::<Axis<0>, 2, 2>(); // 2 · 2 does not cover 5
    /// ```
    #[doc(alias = "chunk")]
    #[track_caller]
    pub fn split<Ax, const LEN: usize, const N: usize>(&self) -> Pieces<T, S, Ax, D, LEN, N>
    where
        S: HasAxis<Ax>,
    {
        let () = SplitTiles::<S, Ax, LEN, N>::OK;
        or_panic(self.split_checked::<Ax, LEN, N>())
    }

    /// [`Self::split`], returning `Error::AxisSize` when `LEN * N` is not the size of a runtime-sized axis.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, (usize,), Cpu>::zeros_with_shape((6,));
    /// let [x, y] = a.try_split::<Axis<0>, 3, 2>().unwrap();
    /// assert_eq!((x.to_vec().len(), y.to_vec().len()), (3, 3));
    /// let err = a.try_split::<Axis<0>, 2, 2>().unwrap_err();
    /// assert_eq!(err.to_string(), "split: axis 0 has size 6, expected 4");
    /// ```
    pub fn try_split<Ax, const LEN: usize, const N: usize>(
        &self,
    ) -> Result<Pieces<T, S, Ax, D, LEN, N>>
    where
        S: HasAxis<Ax>,
    {
        let () = SplitTiles::<S, Ax, LEN, N>::OK;
        self.split_checked::<Ax, LEN, N>()
    }

    /// [`Self::split`] without its build-time check, for compositions that check the sizes themselves with their
    /// own message (the recurrent cells' gates); panics when the pieces do not cover the axis.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // its callers (autograd, nn) need std
    #[track_caller]
    pub(crate) fn split_unchecked<Ax, const LEN: usize, const N: usize>(
        &self,
    ) -> Pieces<T, S, Ax, D, LEN, N>
    where
        S: HasAxis<Ax>,
    {
        or_panic(self.split_checked::<Ax, LEN, N>())
    }

    pub(super) fn split_checked<Ax, const LEN: usize, const N: usize>(
        &self,
    ) -> Result<Pieces<T, S, Ax, D, LEN, N>>
    where
        S: HasAxis<Ax>,
    {
        let size = self.dims()[S::INDEX];
        if LEN * N != size {
            return Err(Error::AxisSize {
                op: "split",
                axis: S::INDEX,
                expected: LEN * N,
                found: size,
            });
        }
        Ok(core::array::from_fn(|i| {
            let layout = device_ok(self.layout().narrow("split", S::INDEX, i * LEN, LEN));
            Tensor::from_view(shape_of("split", layout.dims()), layout, self.storage())
        }))
    }

    /// Rotates along `Ax`: entry `i` moves to `(i + shift) mod size` (negative shifts rotate the other way).
    pub fn roll<Ax>(&self, shift: isize) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.roll_axis(S::INDEX, shift)
    }

    /// [`Self::roll`] along `axis` (also the gradient's, on the padded form).
    pub(crate) fn roll_axis(&self, axis: usize, shift: isize) -> Self {
        let n = self.dims()[axis];
        let s = if n == 0 {
            0
        } else {
            shift.rem_euclid(n as isize) as usize
        };
        if s == 0 {
            return self.clone();
        }
        // The last `s` entries, then the first `n - s`.
        let layout = self.layout();
        let (tail, head) = (
            device_ok(layout.narrow("roll", axis, n - s, s)),
            device_ok(layout.narrow("roll", axis, 0, n - s)),
        );
        let parts = [(self.buffer(), &tail), (self.buffer(), &head)];
        written!(
            Self::written_by,
            self.shape(),
            "roll",
            call::concat::<T, D>(&parts, axis)
        )
    }

    /// `BEFORE` zeros, the tensor, `AFTER` zeros along `Ax`; `OUT` is the padded size (a `const` assertion for a
    /// static axis; a runtime-sized one panics, see [`Self::try_pad`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([1., 2.]);
    /// assert_eq!(x.pad::<Axis<0>, 1, 2, 5>().to_array(), [0., 1., 2., 0., 0.]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::join_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank1<2>, Cpu>::zeros();
    /// let p = x.pad::<Axis<0>, 1, 2, 6>(); // 1 + 2 + 2 = 5, not 6
    /// ```
    #[track_caller]
    pub fn pad<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        let () = PadSizes::<S, Ax, BEFORE, AFTER, OUT>::OK;
        or_panic(self.pad_checked::<Ax, BEFORE, AFTER, OUT>(T::ZERO))
    }

    /// [`Self::pad`] with `value` in the new entries (PyTorch's `F.pad(.., mode="constant", value=..)`).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, _, Cpu>::from_array([1., 2.]);
    /// let p: Tensor<f32, Rank1<4>, Cpu> = a.pad_value::<Axis<0>, 1, 1, 4>(-1.);
    /// assert_eq!(p.to_array(), [-1., 1., 2., -1.]);
    /// ```
    #[track_caller]
    pub fn pad_value<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
        value: T,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        let () = PadSizes::<S, Ax, BEFORE, AFTER, OUT>::OK;
        or_panic(self.pad_checked::<Ax, BEFORE, AFTER, OUT>(value))
    }

    /// [`Self::pad`], returning `Error::AxisSize` when a runtime-sized axis is not `OUT - BEFORE - AFTER` long.
    pub fn try_pad<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>>
    where
        S: HasAxis<Ax>,
    {
        let () = PadSizes::<S, Ax, BEFORE, AFTER, OUT>::OK;
        self.pad_checked::<Ax, BEFORE, AFTER, OUT>(T::ZERO)
    }

    fn pad_checked<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
        value: T,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>>
    where
        S: HasAxis<Ax>,
    {
        let axis = S::INDEX;
        let dims = self.dims();
        // BEFORE + AFTER <= OUT is checked at build time.
        let expected = OUT - BEFORE - AFTER;
        if dims[axis] != expected {
            return Err(Error::AxisSize {
                op: "pad",
                axis,
                expected,
                found: dims[axis],
            });
        }
        let mut out = dims;
        out.as_mut_slice()[axis] = OUT;
        check_output::<T>("pad", &out)?;
        // The new slabs are one stored value seen with stride 0.
        let zero = D::full::<T, ()>(1, value)?;
        let slab = |len: usize| {
            let mut d = dims;
            d.as_mut_slice()[axis] = len;
            Layout::from_parts(d, &[0; MAX_RANK], 0)
        };
        let (before, after) = (slab(BEFORE), slab(AFTER));
        let layout = self.layout();
        let parts = [
            (D::buffer(&zero), &before),
            (self.buffer(), &layout),
            (D::buffer(&zero), &after),
        ];
        written!(
            Tensor::try_written_by,
            shape_of("pad", &out),
            "pad",
            call::concat::<T, D>(&parts, axis),
        )
    }
}
