//! `.i(...)` on traced values: the view's gradient is the output's gradient added back at the positions the
//! view reads (zeros elsewhere).

use crate::autograd::Traced;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::shape::Shape;
use crate::tensor::{IndexOp, Tensor};

impl<T: FloatDType, S: Shape, D: Device, Idx: Clone + Send + 'static, S2: Shape> IndexOp<Idx>
    for Traced<T, S, D>
where
    Tensor<T, S, D>: IndexOp<Idx, Output = Tensor<T, S2, D>>,
{
    type Output = Traced<T, S2, D>;
    fn try_i(&self, idx: Idx) -> Result<Self::Output> {
        let value = self.value.try_i(idx.clone())?;
        let shape = self.value.shape();
        Ok(self.unary_op(value, move |g| {
            // The same index applied to a contiguous layout of the source gives the positions it read.
            let probe = Tensor::<T, S, D>::zeros_with_shape(shape);
            let view = probe.i(idx);
            Tensor::scatter_view(shape, &view.layout(), &g)
        }))
    }
}
