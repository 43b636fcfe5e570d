//! PReLU (PyTorch's `prelu`): `x` where positive, `weight[c] x` elsewhere, with one learned slope per channel
//! (axis 1, PyTorch's channel axis). The slopes are read in place through a layout with stride 0 on every other
//! axis; the forward is a multiply, a comparison and a `where`.

use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::ops::Device;
use crate::ops::{self, CmpOp};
use crate::shape::{Axis, Const, HasAxis, Shape, MAX_RANK};
use crate::tensor::Tensor;

/// `weight`'s elements laid along `axis` of `dims` (stride 0 elsewhere).
fn along_axis(weight: &Layout, dims: &crate::shape::Dims, axis: usize) -> Layout {
    let mut strides = [0; MAX_RANK];
    strides[axis] = weight.strides()[0];
    Layout::from_parts(*dims, &strides[..dims.len()], weight.offset())
}

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `self` where positive, `weight[c] * self` elsewhere, `c` the index along axis 1 (PyTorch's `prelu`; its
    /// layer starts every slope at 0.25).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[-2., 3.], [-4., -1.]]);
    /// let slopes = Tensor::<f32, _, Cpu>::from_array([0.5, 0.1]);
    /// assert_eq!(x.prelu(&slopes).to_array(), [[-1., 3.], [-2., -0.1]]);
    /// ```
    #[track_caller]
    pub fn prelu<const C: usize>(&self, weight: &Tensor<T, (Const<C>,), D>) -> Self
    where
        S: HasAxis<Axis<1>, Dim = Const<C>>,
    {
        let slopes = self.slopes_of(weight);
        let scaled = self.zip_same(ops::Mul, &slopes);
        self.compare_scalar(CmpOp::Gt, T::ZERO)
            .where_cond(self, &scaled)
    }

    /// `weight` as a view with this tensor's shape (each slope repeated over every axis but 1).
    fn slopes_of<const C: usize>(&self, weight: &Tensor<T, (Const<C>,), D>) -> Self {
        let layout = along_axis(&weight.layout(), &self.dims(), 1);
        weight.view_as(layout)
    }
}

#[cfg(feature = "std")]
mod traced {
    use super::*;
    use crate::autograd::{record_with, Gradients, Slot, Traced};
    use crate::tensor::{padded_shape, Grad, Padded};

    /// PReLU's gradients: `g` where `x > 0` and `g w` elsewhere for the input; for the slopes, `g x` where
    /// `x <= 0`, summed over every axis but the channel one.
    fn prelu_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        ([sx, sw], x, slopes, axis): ([Slot; 2], Grad<T, D>, Grad<T, D>, usize),
        store: &mut Gradients,
    ) {
        let positive = x.compare_scalar(CmpOp::Gt, T::ZERO);
        sx.give_padded_with(store, || {
            positive.where_cond(&g, &g.zip_same(ops::Mul, &slopes))
        });
        sw.give_padded_with(store, || {
            let gx = positive.where_cond(&x.zeros_like(), &g.zip_same(ops::Mul, &x));
            let mut reduced = [true; MAX_RANK];
            reduced[axis] = false;
            let per_channel =
                crate::tensor::or_panic(gx.reduce_with::<_, Padded>(ops::Sum, &reduced, true));
            let channels = x.dims()[axis];
            per_channel.relabel(padded_shape(&crate::shape::Dims::from_slice(&[channels])))
        });
    }

    impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
        /// PReLU with learned slopes (see [`Tensor::prelu`]); gradients reach the input and the slopes.
        #[track_caller]
        pub fn prelu<const C: usize>(&self, weight: &Traced<T, (Const<C>,), D>) -> Self
        where
            S: HasAxis<Axis<1>, Dim = Const<C>>,
        {
            let y = self.value.prelu(&weight.value);
            let slopes = self.value.slopes_of(&weight.value);
            let axis = MAX_RANK - S::RANK + 1;
            let captured = (
                [self.slot(), weight.slot()],
                self.value.padded(),
                slopes.padded(),
                axis,
            );
            record_with(y, &[&self.node, &weight.node], captured, prelu_rule::<T, D>)
        }
    }
}
