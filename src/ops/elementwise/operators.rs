//! `std::ops` for tensors: `+ - * /` between tensors (all four owned/borrowed combinations, same shape or suffix
//! broadcast) and with scalars on either side, and `-x`.

use crate::dtype::{SignedDType, WithDType};
use crate::ops;
use crate::ops::{Device, SameDevice};
use crate::shape::{BroadcastShapes, Shape};
use crate::tensor::Tensor;

// `std::ops` for tensors: all four owned/borrowed combinations, same shape or suffix broadcast.
macro_rules! tensor_binop {
    ($tr:ident, $method:ident, $op:ident) => {
        impl<
                T: WithDType,
                S: Shape + BroadcastShapes<S2>,
                S2: Shape,
                D: Device,
                D2: SameDevice<D>,
            > core::ops::$tr<&Tensor<T, S2, D2>> for &Tensor<T, S, D>
        {
            type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<T, S2, D2>) -> Self::Output {
                self.binary(ops::$op, D2::same(rhs))
            }
        }
        // An owned left operand lends its buffer to the result where it can (`binary_owned`).
        impl<
                T: WithDType,
                S: Shape + BroadcastShapes<S2>,
                S2: Shape,
                D: Device,
                D2: SameDevice<D>,
            > core::ops::$tr<Tensor<T, S2, D2>> for Tensor<T, S, D>
        {
            type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: Tensor<T, S2, D2>) -> Self::Output {
                self.binary_owned(ops::$op, D2::same(&rhs))
            }
        }
        impl<
                T: WithDType,
                S: Shape + BroadcastShapes<S2>,
                S2: Shape,
                D: Device,
                D2: SameDevice<D>,
            > core::ops::$tr<&Tensor<T, S2, D2>> for Tensor<T, S, D>
        {
            type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<T, S2, D2>) -> Self::Output {
                self.binary_owned(ops::$op, D2::same(rhs))
            }
        }
        impl<
                T: WithDType,
                S: Shape + BroadcastShapes<S2>,
                S2: Shape,
                D: Device,
                D2: SameDevice<D>,
            > core::ops::$tr<Tensor<T, S2, D2>> for &Tensor<T, S, D>
        {
            type Output = Tensor<T, <S as BroadcastShapes<S2>>::Output, D>;
            #[track_caller]
            fn $method(self, rhs: Tensor<T, S2, D2>) -> Self::Output {
                self.binary(ops::$op, D2::same(&rhs))
            }
        }
    };
}
tensor_binop!(Add, add, Add);
tensor_binop!(Sub, sub, Sub);
tensor_binop!(Mul, mul, Mul);
tensor_binop!(Div, div, Div);

// A scalar of the element type on the right works in generic code: `&t * T::from_f64(2.0)`.
macro_rules! scalar_rhs_binop {
    ($($tr:ident $method:ident $op:ident),*) => {$(
        impl<T: WithDType, S: Shape, D: Device> core::ops::$tr<T> for &Tensor<T, S, D> {
            type Output = Tensor<T, S, D>;
            fn $method(self, rhs: T) -> Self::Output {
                self.scalar_op(ops::$op, rhs, false)
            }
        }
        impl<T: WithDType, S: Shape, D: Device> core::ops::$tr<T> for Tensor<T, S, D> {
            type Output = Tensor<T, S, D>;
            fn $method(self, rhs: T) -> Self::Output {
                self.scalar_op(ops::$op, rhs, false)
            }
        }
    )*};
}
scalar_rhs_binop!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);

// A scalar on the left (`1.0 - &t`) needs one impl per concrete dtype: the orphan rule forbids `impl Sub<..> for T`.
macro_rules! scalar_lhs_binop {
    ($t:ty; $($tr:ident $method:ident $op:ident),*) => {$(
        impl<S: Shape, D: Device> core::ops::$tr<&Tensor<$t, S, D>> for $t {
            type Output = Tensor<$t, S, D>;
            fn $method(self, rhs: &Tensor<$t, S, D>) -> Self::Output {
                rhs.scalar_op(ops::$op, self, true)
            }
        }
        impl<S: Shape, D: Device> core::ops::$tr<Tensor<$t, S, D>> for $t {
            type Output = Tensor<$t, S, D>;
            fn $method(self, rhs: Tensor<$t, S, D>) -> Self::Output {
                rhs.scalar_op(ops::$op, self, true)
            }
        }
    )*};
}
macro_rules! scalar_lhs_ops_for {
    ($($t:ty),*) => {$(
        scalar_lhs_binop!($t; Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);
    )*};
}
scalar_lhs_ops_for!(u8, i8, u32, i32, i64, half::f16, half::bf16, f32, f64);

impl<T: SignedDType, S: Shape, D: Device> core::ops::Neg for &Tensor<T, S, D> {
    type Output = Tensor<T, S, D>;
    fn neg(self) -> Self::Output {
        self.unary(ops::Neg)
    }
}
impl<T: SignedDType, S: Shape, D: Device> core::ops::Neg for Tensor<T, S, D> {
    type Output = Tensor<T, S, D>;
    fn neg(self) -> Self::Output {
        self.unary(ops::Neg)
    }
}
