//! `concat`: several tensors laid end to end along one axis in one pass (PyTorch's `torch.cat([a, b, c], dim)`),
//! given as a tuple of references whose shapes agree off the axis; the joined size is in the call, checked
//! against the parts' sizes (at build time where they are static). Two tensors also have the method form
//! `a.cat(&b)`.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let a = Tensor::<f32, Rank2<2, 1>, Cpu>::from_array([[1.], [4.]]);
//! let b = Tensor::<f32, Rank2<2, 2>, Cpu>::from_array([[2., 3.], [5., 6.]]);
//! let c = Tensor::<f32, Rank2<2, 1>, Cpu>::from_array([[7.], [8.]]);
//! let joined: Tensor<f32, Rank2<2, 4>, Cpu> = Tensor::concat::<Axis<1>, 4>((&a, &b, &c));
//! assert_eq!(joined.to_array(), [[1., 2., 3., 7.], [4., 5., 6., 8.]]);
//! ```

use super::tensor::shape_of;
#[cfg(feature = "std")]
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::device::Kernels;
#[cfg(feature = "std")]
use crate::dtype::FloatDType;
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::size_check::{self, n, t, PanicVal};
use crate::shape::{checked_size_add, AgreeExceptAxis, Const, HasAxis, Shape};
use crate::tensor::{call, check_output, or_panic, written, Tensor};
#[cfg(feature = "std")]
use crate::tensor::{padded_shape, Grad, Padded};
use core::marker::PhantomData;

/// The most tensors one `concat` joins.
const MAX_PARTS: usize = 6;

/// A `concat`'s output: the first part's shape with `OUT` along `Ax`.
type Joined<T, S, Ax, D, const OUT: usize> = Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>;

/// What `concat`'s rule keeps of each part: where its gradient goes, its padded shape, its start along the axis.
#[cfg(feature = "std")]
type PartGrads = [Option<(Slot, Padded, usize)>; MAX_PARTS];

/// The parts of a `concat`, shape-erased: each part's buffer and view.
#[doc(hidden)]
pub struct Erased<'a, T: WithDType, D: Device> {
    parts: [Option<(&'a <D as Kernels>::Buffer<T>, Layout)>; MAX_PARTS],
}

/// Tensors `concat` joins along `Ax`: a tuple of two to six references, `(&a, &b, &c)`, whose shapes agree on
/// every axis but `Ax` (the first names the output's other dims).
#[diagnostic::on_unimplemented(
    message = "cannot concatenate `{Self}` along `{Ax}`",
    label = "a tuple of two to six references to tensors whose shapes agree on every axis but the joined one",
    note = "`Tensor::concat::<Axis<1>, 9>((&a, &b, &c))` joins (2, 4), (2, 2) and (2, 3) into (2, 9)"
)]
pub trait CatParts<Ax> {
    /// The element type.
    type Elem: WithDType;
    /// The device.
    type Device: Device;
    /// The first part's shape.
    type First: HasAxis<Ax>;
    /// Each part's static size along the axis (`None` for a runtime-sized one), and how many parts there are.
    #[doc(hidden)]
    const SIZES: ([Option<usize>; MAX_PARTS], usize);
    /// The parts as buffers and views.
    #[doc(hidden)]
    fn erased(&self) -> Erased<'_, Self::Elem, Self::Device>;
}

/// Traced values `concat` joins along `Ax`, as [`CatParts`].
#[cfg(feature = "std")]
#[diagnostic::on_unimplemented(
    message = "cannot concatenate `{Self}` along `{Ax}`",
    label = "a tuple of two to six references to traced values whose shapes agree on every axis but the joined one"
)]
pub trait TracedCatParts<Ax> {
    /// The element type.
    type Elem: FloatDType;
    /// The device.
    type Device: Device;
    /// The first part's shape.
    type First: HasAxis<Ax>;
    /// The parts' values, joined by the tensor form.
    #[doc(hidden)]
    #[allow(clippy::type_complexity)]
    fn joined<const OUT: usize>(
        &self,
    ) -> Result<Joined<Self::Elem, Self::First, Ax, Self::Device, OUT>>;
    /// Records the joined value with each part's gradient its slice of the output's.
    #[doc(hidden)]
    fn record<S2: Shape>(
        &self,
        value: Tensor<Self::Elem, S2, Self::Device>,
    ) -> Traced<Self::Elem, S2, Self::Device>;
}

/// `concat`'s gradients: each part's slice of the output's, along `axis` of the padded form.
#[cfg(feature = "std")]
fn concat_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (parts, axis): (PartGrads, usize),
    store: &mut Gradients,
) {
    for (slot, shape, start) in parts.into_iter().flatten() {
        slot.give_padded_with(store, || g.narrow_to(shape, axis, start));
    }
}

macro_rules! cat_parts {
    ($count:literal; $s0:ident $p0:tt $(, $s:ident $p:tt)*) => {
        #[diagnostic::do_not_recommend]
        impl<'t, T: WithDType, D: Device, Ax, $s0: HasAxis<Ax> $(+ AgreeExceptAxis<$s, Ax>)*, $($s: Shape),*>
            CatParts<Ax> for (&'t Tensor<T, $s0, D>, $(&'t Tensor<T, $s, D>,)*)
        {
            type Elem = T;
            type Device = D;
            type First = $s0;
            const SIZES: ([Option<usize>; MAX_PARTS], usize) = {
                let axis = <$s0 as HasAxis<Ax>>::INDEX;
                let mut sizes = [None; MAX_PARTS];
                sizes[0] = $s0::STATIC_DIMS[axis];
                $(sizes[$p] = $s::STATIC_DIMS[axis];)*
                (sizes, $count)
            };
            fn erased(&self) -> Erased<'_, T, D> {
                let mut parts = [const { None }; MAX_PARTS];
                parts[0] = Some((self.$p0.buffer(), self.$p0.layout()));
                $(parts[$p] = Some((self.$p.buffer(), self.$p.layout()));)*
                Erased { parts }
            }
        }

        #[cfg(feature = "std")]
        #[diagnostic::do_not_recommend]
        impl<'t, T: FloatDType, D: Device, Ax, $s0: HasAxis<Ax> $(+ AgreeExceptAxis<$s, Ax>)*, $($s: Shape),*>
            TracedCatParts<Ax> for (&'t Traced<T, $s0, D>, $(&'t Traced<T, $s, D>,)*)
        {
            type Elem = T;
            type Device = D;
            type First = $s0;
            fn joined<const OUT: usize>(
                &self,
            ) -> Result<Joined<T, $s0, Ax, D, OUT>> {
                Tensor::try_concat::<Ax, OUT>((self.$p0.value(), $(self.$p.value(),)*))
            }
            #[allow(unused_assignments)] // the last part's end
            fn record<S2: Shape>(&self, value: Tensor<T, S2, D>) -> Traced<T, S2, D> {
                let axis = self.$p0.padded_axis::<Ax>();
                let index = <$s0 as HasAxis<Ax>>::INDEX;
                let mut parts = [None; MAX_PARTS];
                let mut start = 0;
                for (i, part) in [self.$p0.slot() $(, self.$p.slot())*].into_iter().enumerate() {
                    let dims = [self.$p0.value().dims() $(, self.$p.value().dims())*][i];
                    parts[i] = Some((part, padded_shape(&dims), start));
                    start += dims[index];
                }
                let nodes = [&self.$p0.node $(, &self.$p.node)*];
                record_with(value, &nodes, (parts, axis), concat_rule::<T, D>)
            }
        }
    };
}
cat_parts!(2; A 0, B 1);
cat_parts!(3; A 0, B 1, C 2);
cat_parts!(4; A 0, B 1, C 2, E 3);
cat_parts!(5; A 0, B 1, C 2, E 3, F 4);
cat_parts!(6; A 0, B 1, C 2, E 3, F 4, G 5);

/// The build-time check of `concat`: where every part's size along the axis is static, they add up to `OUT`.
struct ConcatSizes<Ax, P, const OUT: usize>(PhantomData<(Ax, P)>);
impl<Ax, P: CatParts<Ax>, const OUT: usize> ConcatSizes<Ax, P, OUT> {
    const OK: () = {
        let (sizes, count) = P::SIZES;
        let mut sum = 0;
        let mut all_static = true;
        let mut terms: [PanicVal<'static>; 2 * MAX_PARTS] = [t(""); 2 * MAX_PARTS];
        let mut i = 0;
        while i < count {
            match sizes[i] {
                Some(size) => sum += size,
                None => all_static = false,
            }
            terms[2 * i] = if i == 0 { t("") } else { t(" + ") };
            terms[2 * i + 1] = n(match sizes[i] {
                Some(size) => size,
                None => 0,
            });
            i += 1;
        }
        if all_static && sum != OUT {
            size_check::concat_panic(&[
                &[t("concat: the sizes along the axis ")],
                &terms,
                &[t(" = "), n(sum), t(", but the output type says "), n(OUT)],
            ]);
        }
    };
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The tensors of `parts` (a tuple of two to six references) laid end to end along `Ax` in one pass
    /// (PyTorch's `torch.cat`); `OUT` is the joined size, which a static sum must equal (a build error naming the
    /// sizes). Panics when runtime-sized dims disagree; see [`Self::try_concat`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<i32, Rank1<2>, Cpu>::from_array([1, 2]);
    /// let b = Tensor::<i32, Rank1<1>, Cpu>::from_array([3]);
    /// let c: Tensor<i32, Rank1<5>, Cpu> = Tensor::concat::<Axis<0>, 5>((&a, &b, &a));
    /// assert_eq!(c.to_array(), [1, 2, 3, 1, 2]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::join_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<i32, Rank1<2>, Cpu>::zeros();
    /// // "concat: the sizes along the axis 2 + 2 + 2 = 6, but the output type says 5"
    /// let c: Tensor<i32, Rank1<5>, Cpu> = Tensor::concat::<Axis<0>, 5>((&a, &a, &a));
    /// ```
    #[track_caller]
    pub fn concat<Ax, const OUT: usize>(
        parts: impl CatParts<Ax, Elem = T, Device = D, First = S>,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        Self::check_sizes::<Ax, OUT, _>(&parts);
        or_panic(Self::try_concat::<Ax, OUT>(parts))
    }

    /// [`Self::concat`], returning `Error::ShapeMismatch` when runtime-sized dims off the axis disagree and
    /// `Error::AxisSize` when the sizes along it do not add up to `OUT`.
    pub fn try_concat<Ax, const OUT: usize>(
        parts: impl CatParts<Ax, Elem = T, Device = D, First = S>,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>>
    where
        S: HasAxis<Ax>,
    {
        Self::check_sizes::<Ax, OUT, _>(&parts);
        concat_checked::<Ax, OUT, _>("concat", &parts)
    }

    /// The build-time check that static sizes add up to `OUT`, at the caller's call.
    #[inline(always)]
    fn check_sizes<Ax, const OUT: usize, P: CatParts<Ax>>(_: &P) {
        let () = ConcatSizes::<Ax, P, OUT>::OK;
    }
}

/// [`Tensor::try_concat`]'s body, for any parts (and `cat`'s, for two), its errors naming `op`.
#[allow(clippy::type_complexity)]
pub(super) fn concat_checked<Ax, const OUT: usize, P: CatParts<Ax>>(
    op: &'static str,
    parts: &P,
) -> Result<Joined<P::Elem, P::First, Ax, P::Device, OUT>> {
    let axis = <P::First as HasAxis<Ax>>::INDEX;
    let erased = parts.erased();
    let present: &[_] = &erased.parts[..P::SIZES.1];
    let views = present.iter().flatten();
    let first = *views.clone().next().expect("two parts or more").1.dims();
    let mut joined = 0usize;
    for (_, layout) in views.clone() {
        let dims = layout.dims();
        if (0..first.len()).any(|ax| ax != axis && dims[ax] != first[ax]) {
            return Err(Error::shape_mismatch(op, first, *dims));
        }
        joined = checked_size_add(joined, dims[axis]).ok_or_else(|| {
            let mut all = first;
            all.as_mut_slice()[axis] = usize::MAX; // a size past any address space, for the message
            Error::ShapeOverflow { op, dims: all }
        })?;
    }
    if joined != OUT {
        return Err(Error::AxisSize {
            op,
            axis,
            expected: OUT,
            found: joined,
        });
    }
    let mut out = first;
    out.as_mut_slice()[axis] = OUT;
    check_output::<P::Elem>(op, &out)?;
    let refs: [_; MAX_PARTS] = core::array::from_fn(|i| {
        let (buffer, layout) = present
            .get(i)
            .copied()
            .flatten()
            .unwrap_or(present[0].expect("a part"));
        (buffer, layout)
    });
    let layouts: [Layout; MAX_PARTS] = core::array::from_fn(|i| refs[i].1);
    let views: [_; MAX_PARTS] = core::array::from_fn(|i| (refs[i].0, &layouts[i]));
    written!(
        Tensor::try_written_by,
        shape_of(op, &out),
        op,
        call::concat::<P::Elem, P::Device>(&views[..P::SIZES.1], axis),
    )
}

#[cfg(feature = "std")]
impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// The traced values of `parts` laid end to end along `Ax` (see [`Tensor::concat`]); each part's gradient is
    /// its slice of the output's.
    #[track_caller]
    pub fn concat<Ax, const OUT: usize>(
        parts: impl TracedCatParts<Ax, Elem = T, Device = D, First = S>,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        let value = or_panic(parts.joined::<OUT>());
        parts.record(value)
    }
}
