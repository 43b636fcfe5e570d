//! Rearranging ops: `flip`, `roll`, `pad`, `split` (each gradient undoes the rearrangement,
//! summing where the op repeated elements), `where_cond`, and the products and exact GELU whose gradients need
//! more care.

use crate::autograd::{Traceable, Traced};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::ops::{self, CmpOp};
use crate::shape::{Const, HasAxis, ReduceShape, Shape, MAX_RANK};
use crate::tensor::Tensor;

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// The entries of axis `Ax` in reverse order.
    pub fn flip<Ax>(&self) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.unary_op(self.value.flip::<Ax>(), |g| g.flip::<Ax>())
    }

    /// The entries of axis `Ax` rotated by `shift` (positive: towards higher indices).
    pub fn roll<Ax>(&self, shift: isize) -> Self
    where
        S: HasAxis<Ax>,
    {
        self.unary_op(self.value.roll::<Ax>(shift), move |g| g.roll::<Ax>(-shift))
    }

    /// `BEFORE` zeros, the tensor, `AFTER` zeros along `Ax` (see [`Tensor::pad`]).
    #[track_caller]
    pub fn pad<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        let shape = self.value.shape();
        self.unary_op(self.value.pad::<Ax, BEFORE, AFTER, OUT>(), move |g| {
            g.narrow_to(shape, S::INDEX, BEFORE)
        })
    }

    /// `N` consecutive pieces of `LEN` entries along `Ax` (see [`Tensor::split`]).
    #[track_caller]
    pub fn split<Ax, const LEN: usize, const N: usize>(
        &self,
    ) -> [Traced<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>; N]
    where
        S: HasAxis<Ax>,
    {
        let pieces = self.value.split::<Ax, LEN, N>();
        let shape = self.value.shape();
        let mut pieces = pieces.into_iter();
        core::array::from_fn(|i| {
            let piece = pieces.next().expect("N pieces");
            self.unary_op(piece, move |g| g.embed_in(shape, S::INDEX, i * LEN))
        })
    }

    /// `on_true` where `mask` is non-zero, `on_false` elsewhere; each side's gradient is the output's where it
    /// was picked.
    #[track_caller]
    pub fn where_cond<R>(mask: &Tensor<u8, S, D>, on_true: &Self, on_false: &R) -> Self
    where
        R: Traceable<Elem = T, Shape = S, Device = D>,
    {
        let on_false = on_false.traced();
        let value = mask.where_cond(&on_true.value, &on_false.value);
        let picked = mask.to_dtype::<T>().mask_scalar(CmpOp::Ne, T::ZERO);
        let (st, sf) = (on_true.slot(), on_false.slot());
        Self::record(value, &[&on_true.node, &on_false.node], move |g, grads| {
            st.give(grads, || g.zip_same(ops::Mul, &picked));
            sf.give(grads, || g.zip_same(ops::Mul, &picked.affine(-1.0, 1.0)));
        })
    }

    /// GELU, exact erf form: gradient `Phi(x) + x phi(x)` (the normal CDF and density).
    pub fn gelu_erf(&self) -> Self {
        let x = self.value.clone();
        self.unary_op(self.value.gelu_erf(), move |g| {
            // Phi(x) = gelu_erf(x) / x away from 0, and 1/2 at 0.
            let at_zero = x.mask_scalar(CmpOp::Eq, T::ZERO);
            let x_safe = x.zip_same(ops::Add, &at_zero);
            let cdf = x
                .gelu_erf()
                .zip_same(ops::Div, &x_safe)
                .zip_same(ops::Mul, &at_zero.affine(-1.0, 1.0))
                .zip_same(ops::Add, &at_zero.affine(0.5, 0.0));
            let pdf = x
                .sqr()
                .affine(-0.5, 0.0)
                .exp()
                .affine(1.0 / (2.0 * core::f64::consts::PI).sqrt(), 0.0);
            g.zip_same(
                ops::Mul,
                &cdf.zip_same(ops::Add, &x.zip_same(ops::Mul, &pdf)),
            )
        })
    }

    /// Product over the axes `Axes`. The gradient is the product of the other elements of the lane: `prod / x`
    /// without zeros, `prod of the others` at a lone zero, and 0 everywhere in a lane with two zeros or more.
    pub fn prod<Axes>(&self) -> Traced<T, <S as ReduceShape<Axes>>::Output, D>
    where
        S: ReduceShape<Axes>,
    {
        let x = self.value.clone();
        self.unary_op(self.value.prod::<Axes>(), move |g| {
            let reduced: [bool; MAX_RANK] = S::REDUCED;
            let zero = x.mask_scalar(CmpOp::Eq, T::ZERO);
            let zeros_in_lane = zero.sum_spread(&reduced);
            let x_safe = x.zip_same(ops::Add, &zero); // zeros replaced by ones
            let others = x_safe.reduce_spread(ops::Prod, &reduced); // product of the non-zero elements
            let none = zeros_in_lane.mask_scalar(CmpOp::Eq, T::ZERO);
            let one = zeros_in_lane.mask_scalar(CmpOp::Eq, T::ONE);
            let weight = none
                .zip_same(ops::Mul, &others.zip_same(ops::Div, &x_safe))
                .zip_same(
                    ops::Add,
                    &one.zip_same(ops::Mul, &zero).zip_same(ops::Mul, &others),
                );
            g.spread_over(x.shape(), &reduced)
                .zip_same(ops::Mul, &weight)
        })
    }
}
