//! Gradients of convolution (pooling's are `ops/pool/grad.rs`):
//! - input of conv2d: the transposed convolution of the output's gradient (with the forward padding when the
//!   forward pass read every input row and column; otherwise computed without padding, then cropped and
//!   zero-extended to the input's size, which covers strides that leave trailing rows unread);
//! - weight of conv2d: the device's `conv2d_weight_grad` kernel (im2col blocks times the output's gradient on
//!   the CPU and the GPU; a direct loop on `Embedded`, which the tests use as the reference);
//!
//! Shapes here are runtime 4-tuples: the typed wrappers in `autograd` relabel the results.

use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::ops::Conv2dParams;
use crate::ops::Device;
use crate::shape::{Dims, Shape};
use crate::tensor::Tensor;
use crate::tensor::{call, written};

/// A runtime-sized NCHW shape.
pub(crate) type Dyn4 = (usize, usize, usize, usize);

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The sizes of a rank-4 (NCHW) tensor, read from its shape (no layout built).
    pub(crate) fn dims4(&self) -> [usize; 4] {
        let d = self.dims();
        [d[0], d[1], d[2], d[3]]
    }

    /// conv2d of this 4-D view with a 4-D weight view under runtime parameters.
    pub(crate) fn conv2d_dyn<S2: Shape>(
        &self,
        weight: &Tensor<T, S2, D>,
        p: Conv2dParams,
    ) -> Tensor<T, Dyn4, D> {
        let [n, _, h, w] = self.dims4();
        let [co, _, kh, kw] = weight.dims4();
        let [oh, ow] = p
            .output_hw([h, w], [kh, kw])
            .expect("typed-tensor internal error: gradient convolution window does not fit");
        let (lx, lw) = (self.layout(), weight.layout());
        let (x, w_) = ((self.buffer(), &lx), (weight.buffer(), &lw));
        let shape = (n, co, oh, ow);
        written!(
            Tensor::written_by,
            shape,
            "conv2d",
            call::conv2d::<T, D>(x, w_, p)
        )
    }

    /// The transposed convolution of this `(N, C_out, OH, OW)` gradient with a conv2d weight `(C_out, C / G, KH,
    /// KW)`: the gradient with respect to the conv2d input of dims `input`.
    pub(crate) fn conv2d_input_grad<S2: Shape>(
        &self,
        weight: &Tensor<T, S2, D>,
        p: Conv2dParams,
        input: Dyn4,
    ) -> Tensor<T, Dyn4, D> {
        let (n, c, h, w) = input;
        let [_, _, oh, ow] = self.dims4();
        let [_, cog, kh, kw] = weight.dims4();
        if p.transposed_output_hw([oh, ow], [kh, kw]) == [h, w] {
            // The forward pass read every input row and column: the padded transposed convolution is the
            // gradient, with no crop.
            return self.conv_transpose2d_dyn(weight, p, input);
        }
        let unpadded = Conv2dParams {
            padding: [0, 0],
            padding_end: [0, 0],
            output_padding: [0, 0],
            ..p
        };
        let full_h = Conv2dParams::transposed_out_size(oh, kh, p.stride[0], 0, p.dilation[0]);
        let full_w = Conv2dParams::transposed_out_size(ow, kw, p.stride[1], 0, p.dilation[1]);
        let full = self.conv_transpose2d_dyn(weight, unpadded, (n, cog * p.groups, full_h, full_w));
        debug_assert_eq!(cog * p.groups, c);
        // Input row r was read as full row r + padding; rows past the full output were never read.
        let take_h = full_h.saturating_sub(p.padding[0]).min(h);
        let take_w = full_w.saturating_sub(p.padding[1]).min(w);
        if take_h == 0 || take_w == 0 {
            return Tensor::zeros_with_shape(input);
        }
        full.narrow_to((n, c, take_h, full_w), 2, p.padding[0])
            .narrow_to((n, c, take_h, take_w), 3, p.padding[1])
            .embed_in((n, c, h, take_w), 2, 0)
            .embed_in(input, 3, 0)
    }

    /// The gradient with respect to the input (of dims `input`) of a transposed convolution by `weight`, from
    /// its output's gradient (this tensor): the conv2d of the gradient. An output padding of at least the
    /// stride (allowed below the dilation) makes that conv2d longer than the input; its extra rows and columns
    /// are the windows past the input's last position, which are dropped.
    pub(crate) fn conv_transpose2d_input_grad<S2: Shape>(
        &self,
        weight: &Tensor<T, S2, D>,
        p: Conv2dParams,
        input: Dyn4,
    ) -> Tensor<T, Dyn4, D> {
        let (n, c, h, w) = input;
        let full = self.conv2d_dyn(weight, p);
        let (_, _, fh, fw) = full.shape();
        if (fh, fw) == (h, w) {
            return full;
        }
        full.narrow_to((n, c, h, fw), 2, 0).narrow_to(input, 3, 0)
    }

    /// The gradient of a transposed convolution's weight (of dims `weight`) from its output's gradient (this
    /// tensor) and its `input`: the conv2d weight gradient with the two exchanged. Where an output padding of at
    /// least the stride makes the conv2d of the gradient longer than the input, the input is met by zeros.
    pub(crate) fn conv_transpose2d_weight_grad<S2: Shape>(
        &self,
        input: &Tensor<T, S2, D>,
        p: Conv2dParams,
        weight: Dyn4,
    ) -> Tensor<T, Dyn4, D> {
        let [_, _, oh, ow] = self.dims4();
        let [n, c, h, w] = input.dims4();
        let (_, _, kh, kw) = weight;
        let [fh, fw] = p
            .output_hw([oh, ow], [kh, kw])
            .expect("typed-tensor internal error: gradient convolution window does not fit");
        if (fh, fw) == (h, w) {
            return self.conv2d_weight_grad(input, p, weight);
        }
        let zeros_after = input
            .embed_in((n, c, fh, w), 2, 0)
            .embed_in((n, c, fh, fw), 3, 0);
        self.conv2d_weight_grad(&zeros_after, p, weight)
    }

    /// conv_transpose2d of this 4-D view with a 4-D weight view under runtime parameters, into `shape` (its
    /// output dims).
    fn conv_transpose2d_dyn<S2: Shape>(
        &self,
        weight: &Tensor<T, S2, D>,
        p: Conv2dParams,
        shape: Dyn4,
    ) -> Tensor<T, Dyn4, D> {
        let (lx, lw) = (self.layout(), weight.layout());
        let (x, w) = ((self.buffer(), &lx), (weight.buffer(), &lw));
        written!(
            Tensor::written_by,
            shape,
            "conv_transpose2d",
            call::conv_transpose2d::<T, D>(x, w, p),
        )
    }

    /// The gradient of a conv2d weight of dims `weight` from the input (this tensor) and the output's gradient
    /// `grad` (the device's kernel: im2col products on the CPU and the GPU, a direct loop on `Embedded`).
    pub(crate) fn conv2d_weight_grad<S2: Shape>(
        &self,
        grad: &Tensor<T, S2, D>,
        p: Conv2dParams,
        weight: Dyn4,
    ) -> Tensor<T, Dyn4, D> {
        let (_, _, kh, kw) = weight;
        let (lx, lg) = (self.layout(), grad.layout());
        let (x, g) = ((self.buffer(), &lx), (grad.buffer(), &lg));
        written!(
            Tensor::written_by,
            weight,
            "conv2d_weight_grad",
            call::conv2d_weight_grad::<T, D>(x, g, [kh, kw], p),
        )
    }
}

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The gradient of `upsample_nearest2d` by `factor`: each input pixel gets the sum of its `factor x factor`
    /// block of this (the output's) gradient.
    pub(crate) fn upsample_nearest2d_grad(&self, input: Dyn4, factor: usize) -> Tensor<T, Dyn4, D> {
        let (n, c, h, w) = input;
        let f = factor;
        let g = self.contiguous();
        let (oh, ow) = (h * f, w * f);
        let blocks = Layout::from_parts(
            Dims::from_slice(&[n, c, h, f, w, f]),
            &[c * oh * ow, oh * ow, f * ow, ow, f, 1],
            g.offset(),
        );
        let mut reduced = [false; crate::shape::MAX_RANK];
        reduced[3] = true;
        reduced[5] = true;
        let src = (g.buffer(), &blocks);
        written!(
            Tensor::written_by,
            input,
            "sum",
            call::reduce::<T, D, _>(crate::ops::Sum, src, &reduced),
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::device::{Cpu, Embedded};
    use crate::ops::ConvKernels;
    use crate::tensor::{Conv, ConvGeometry};
    use core::mem::MaybeUninit;
    use half::{bf16, f16};

    /// `kernel` run into a fresh vector of `len` elements (the embedded device's loops as a reference).
    pub(crate) fn run_into(
        len: usize,
        kernel: impl FnOnce(&mut [MaybeUninit<f64>]) -> crate::Result<()>,
    ) -> Vec<f64> {
        let mut out = vec![MaybeUninit::new(f64::NAN); len];
        kernel(&mut out).unwrap();
        // SAFETY: every slot held a value from the start.
        out.into_iter()
            .map(|v| unsafe { v.assume_init() })
            .collect()
    }

    pub(crate) fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "{what} [{i}]: {a} vs {b}"
            );
        }
    }

    /// The weight gradient through `T` on `D`, and the embedded device's direct loop in f64 on the same values
    /// (the input a permuted view when `strided`), both as f64. `dims` = (N, C, H, W, C_out, KH, KW).
    fn weight_grads<T: FloatDType, D: Device>(
        p: Conv2dParams,
        strided: bool,
        (n, c, h, w, co, kh, kw): (usize, usize, usize, usize, usize, usize, usize),
    ) -> (Vec<f64>, Vec<f64>) {
        let [oh, ow] = p.output_hw([h, w], [kh, kw]).unwrap();
        // Multiples of 1/8 up to 2: exact in every float dtype, so the low-precision results differ from the f64
        // ones by their sums and final rounding only.
        let values = |len: usize, a: usize, m: usize| -> Vec<f32> {
            (0..len)
                .map(|i| ((i * a % m) as f32 - (m / 2) as f32) / 8.0)
                .collect()
        };
        let on_device = |t: Tensor<f32, Dyn4, Cpu>| -> Tensor<T, Dyn4, D> {
            t.to_dtype::<T>().to_device::<D>().unwrap()
        };
        let xv = values(n * c * h * w, 29, 31);
        let x = if strided {
            // (N, H, C, W) in memory, viewed as (N, C, H, W).
            let nhcw =
                Tensor::<f32, Dyn4, Cpu>::from_vec_with_shape((n, h, c, w), xv.clone()).unwrap();
            on_device(nhcw).permute_to((n, c, h, w), &[0, 2, 1, 3])
        } else {
            on_device(Tensor::from_vec_with_shape((n, c, h, w), xv.clone()).unwrap())
        };
        let gv = values(n * co * oh * ow, 37, 23);
        let gy = on_device(Tensor::from_vec_with_shape((n, co, oh, ow), gv.clone()).unwrap());
        let shape = (co, c / p.groups, kh, kw);
        let kernel = x
            .conv2d_weight_grad(&gy, p, shape)
            .to_dtype::<f64>()
            .to_vec();
        let lx = if strided {
            Layout::from_parts(
                Dims::from_slice(&[n, c, h, w]),
                &[h * c * w, w, c * w, 1],
                0,
            )
        } else {
            Layout::contiguous(Dims::from_slice(&[n, c, h, w]))
        };
        let lg = Layout::contiguous(Dims::from_slice(&[n, co, oh, ow]));
        let wide = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
        let (xs, gs) = (wide(xv), wide(gv));
        let reference = run_into(co * (c / p.groups) * kh * kw, |out| {
            <Embedded as ConvKernels>::conv2d_weight_grad((&xs, &lx), (&gs, &lg), [kh, kw], p, out)
        });
        (kernel, reference)
    }

    /// The device's weight-gradient kernel agrees with the direct loop, for groups, strides, padding, dilation, a
    /// strided input and every float dtype; the larger shape has a contraction (images x output positions) long
    /// enough for the GPU to split it into chunks plus a remainder.
    fn weight_grad_kernel_matches_the_direct_loop<D: Device>() {
        let cases = [
            Conv::<1, 0, 1, 1>::PARAMS,
            Conv::<2, 1, 1, 1>::PARAMS,
            Conv::<1, 1, 2, 2>::PARAMS,
            Conv2dParams {
                stride: [2, 1],
                padding: [1, 0],
                padding_end: [1, 0],
                dilation: [1, 2],
                groups: 2,
                output_padding: [0, 0],
            },
            // Asymmetric padding: more after the input than before on one axis, less on the other.
            Conv2dParams {
                stride: [2, 1],
                padding: [0, 2],
                padding_end: [2, 1],
                dilation: [1, 2],
                groups: 2,
                output_padding: [0, 0],
            },
        ];
        for dims in [(3, 4, 7, 6, 6, 3, 2), (4, 4, 21, 20, 6, 3, 3)] {
            for p in cases {
                for strided in [false, true] {
                    let what = alloc::format!("{dims:?} {p:?}, strided input: {strided}");
                    let (kernel, reference) = weight_grads::<f64, D>(p, strided, dims);
                    close(&what, &kernel, &reference, 1e-12);
                    assert!(
                        kernel.iter().any(|&v| v.abs() > 1.0),
                        "{what}: a real gradient"
                    );
                    let (k32, _) = weight_grads::<f32, D>(p, strided, dims);
                    close(&what, &k32, &reference, 1e-5);
                    // Low precision: inputs rounded once, sums in f32, one rounding at the end.
                    for (got, tol) in [
                        (weight_grads::<f16, D>(p, strided, dims).0, 4e-3),
                        (weight_grads::<bf16, D>(p, strided, dims).0, 3e-2),
                    ] {
                        close(&what, &got, &reference, tol);
                    }
                }
            }
        }
    }

    #[test]
    fn conv_weight_grad_kernel_matches_the_direct_loop() {
        weight_grad_kernel_matches_the_direct_loop::<Cpu>();
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn cuda_conv_weight_grad_kernel_matches_the_direct_loop() {
        if let Err(e) = crate::device::Cuda::init() {
            std::eprintln!("skipped cuda_conv_weight_grad_kernel_matches_the_direct_loop: {e}");
            return;
        }
        weight_grad_kernel_matches_the_direct_loop::<crate::device::Cuda>();
    }
}
