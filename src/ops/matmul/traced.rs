//! The matrix product in every shape form; the gradients are products with the other operand transposed,
//! summed over the batch for an operand the batch shared.

use crate::autograd::{Traceable, Traced};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::{MatMulShape, Shape};

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// The matrix product (see [`Tensor::matmul`](crate::Tensor::matmul) for the shape forms).
    #[track_caller]
    pub fn matmul<R>(&self, rhs: &R) -> Traced<T, <S as MatMulShape<R::Shape>>::Output, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: MatMulShape<R::Shape>,
    {
        let rhs = rhs.traced();
        let value = self.value.matmul(&rhs.value);
        let (sa, sb) = (self.slot(), rhs.slot());
        let (a, b) = (self.value.clone(), rhs.value.clone());
        Self::record(value, &[&self.node, &rhs.node], move |g, store| {
            let (ga, gb) = a.matmul_backward(&b, &g, [sa.wanted(), sb.wanted()]);
            if let Some(ga) = ga {
                sa.give(store, || ga);
            }
            if let Some(gb) = gb {
                sb.give(store, || gb);
            }
        })
    }
}
