//! Gradients of pooling: max pooling routes each window's gradient to its first maximum (its index, which the
//! traced forward pass kept; the device's `max_pool2d_backward` kernel sums what lands on each position); average
//! pooling is a depthwise transposed convolution with a constant kernel. Shapes are runtime 4-tuples.

use super::PoolParams;
use crate::dtype::FloatDType;
use crate::ops::conv::grad::Dyn4;
use crate::ops::Conv2dParams;
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::Tensor;
use crate::tensor::{call, written};
use alloc::vec::Vec;

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The gradient of `max_pool2d` with respect to its input of dims `input` (this tensor is the output's
    /// gradient): each window's gradient goes to its index in `indices` (its first maximum in (row, column)
    /// order, or its first NaN: PyTorch's argmax), which the traced forward pass found with the values.
    pub(crate) fn max_pool2d_grad(
        &self,
        indices: &Tensor<u32, Dyn4, D>,
        input: Dyn4,
        p: PoolParams<2>,
    ) -> Tensor<T, Dyn4, D> {
        let (n, c, h, w) = input;
        let (li, lg) = (indices.layout(), self.layout());
        let (at, g) = ((indices.buffer(), &li), (self.buffer(), &lg));
        written!(
            Tensor::written_by,
            (n, c, h, w),
            "max_pool2d_backward",
            call::max_pool2d_backward::<T, D>(at, g, [h, w], p),
        )
    }

    /// The gradient of `avg_pool2d` (this tensor is the output's gradient) for an input of dims `input`: each
    /// output's gradient divided by its window's divisor, spread over the window's taps (a depthwise transposed
    /// convolution with a kernel of ones, or of `1 / (KH KW)` when every divisor is that).
    pub(crate) fn avg_pool2d_grad(&self, p: PoolParams<2>, input: Dyn4) -> Tensor<T, Dyn4, D> {
        let (n, c, h, w) = input;
        let [kh, kw] = p.kernel;
        let window = Conv2dParams {
            groups: c,
            ..p.window()
        };
        if p.uniform_divisor([h, w]) {
            let weight = Tensor::<T, Dyn4, D>::full_with_shape(
                (c, 1, kh, kw),
                T::from_f64(1.0 / (kh * kw) as f64),
            );
            return self.conv2d_input_grad(&weight, window, input);
        }
        // The per-output divisors (the same for every plane), broadcast over images and channels.
        let [_, _, oh, ow] = self.dims4();
        let divisors: Vec<T> = (0..oh * ow)
            .map(|o| T::from_f64((p.avg_count(0, o / ow, h) * p.avg_count(1, o % ow, w)) as f64))
            .collect();
        let divisors = Tensor::<T, Dyn4, D>::from_vec_with_shape((1, 1, oh, ow), divisors)
            .expect("avg_pool2d gradient: divisor table");
        let spread = divisors.expand_to((n, c, oh, ow));
        let scaled = self
            .relabel((n, c, oh, ow))
            .zip_same(crate::ops::Div, &spread);
        let ones = Tensor::<T, Dyn4, D>::full_with_shape((c, 1, kh, kw), T::ONE);
        scaled.conv2d_input_grad(&ones, window, input)
    }
}

#[cfg(test)]
mod tests {
    use crate::device::{Cpu, Embedded};
    use crate::ops::conv::grad::tests::{close, run_into};
    use crate::ops::PoolKernels;
    use crate::shape::Rank4;
    use crate::tensor::Pool2d;
    use crate::Tensor;

    /// The CPU's max-pool backward kernel (a scatter of each window's gradient to its index) against the
    /// embedded device's direct loop (each input position gathers the gradients of the windows whose index names
    /// it), with ties and overlapping windows, on dense and on transposed (strided) indices and gradients.
    #[test]
    fn max_pool_backward_kernel_matches_the_direct_loop() {
        use crate::shape::Axis;
        // Values on a coarse grid so windows have tied maxima.
        let x = Tensor::<f64, Rank4<2, 3, 5, 6>, Cpu>::rand(1).affine(4.0, 0.0);
        let x = Tensor::<f64, Rank4<2, 3, 5, 6>, Cpu>::from_vec(
            x.to_vec().iter().map(|v| v.floor()).collect(),
        )
        .unwrap();
        let p = crate::ops::PoolParams::square(3, 2, 1);
        let (_, at): (Tensor<f64, Rank4<2, 3, 3, 3>, Cpu>, _) =
            x.max_pool2d_with_indices(Pool2d::<3, 2, 1>);
        let g = Tensor::<f64, Rank4<2, 3, 3, 3>, Cpu>::rand(2);
        for strided in [false, true] {
            // Strided: the same values, stored column-major in each plane.
            let (at, g) = if strided {
                (
                    at.transpose::<Axis<2>, Axis<3>>()
                        .contiguous()
                        .transpose::<Axis<2>, Axis<3>>(),
                    g.transpose::<Axis<2>, Axis<3>>()
                        .contiguous()
                        .transpose::<Axis<2>, Axis<3>>(),
                )
            } else {
                (at.clone(), g.clone())
            };
            let (la, lg) = (at.layout(), g.layout());
            let (at, g) = ((at.buffer(), &la), (g.buffer(), &lg));
            let kernel = run_into(180, |out| {
                <Cpu as PoolKernels>::max_pool2d_backward(at, g, [5, 6], p, out)
            });
            let reference = run_into(180, |out| {
                <Embedded as PoolKernels>::max_pool2d_backward(at, g, [5, 6], p, out)
            });
            // Equal up to the order of the sums where windows share a position.
            close(
                &alloc::format!("strided: {strided}"),
                &kernel,
                &reference,
                1e-12,
            );
            assert!(kernel.iter().filter(|&&v| v != 0.0).count() > 20);
        }
    }
}
