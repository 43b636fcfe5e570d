//! The matrix product in every shape form; the gradients are products with the other operand transposed,
//! summed over the batch for an operand the batch shared.

use super::tensor::matmul_backward;
use crate::autograd::{record_with, Gradients, Slot, Traceable, Traced};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{MatMulShape, Shape};
use crate::tensor::Grad;

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
        let saved = [self.value.padded(), rhs.value.padded()];
        let captured = ([self.slot(), rhs.slot()], saved, [S::RANK, R::Shape::RANK]);
        record_with(
            value,
            &[&self.node, &rhs.node],
            captured,
            matmul_rule::<T, D>,
        )
    }
}

/// What the product's rule keeps: the inputs' slots, the operands (padded) and their ranks.
type MatmulCaptured<T, D> = ([Slot; 2], [Grad<T, D>; 2], [usize; 2]);

/// The product's backward rule, compiled once per element type and device.
fn matmul_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sa, sb], [a, b], ranks): MatmulCaptured<T, D>,
    store: &mut Gradients,
) {
    let [ga, gb] = matmul_backward(&a, &b, ranks, &g, [sa.wanted(), sb.wanted()]);
    if let Some(ga) = ga {
        sa.give_padded(store, ga);
    }
    if let Some(gb) = gb {
        sb.give_padded(store, gb);
    }
}
