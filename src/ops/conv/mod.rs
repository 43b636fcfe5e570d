//! Convolution and pooling on NCHW tensors: the `Tensor` methods with their hyper-parameters as const generics
//! (`tensor.rs`), the gradients built from the forward kernels (`grad.rs`) and the traced forms (`traced.rs`);
//! the device side is [`ConvKernels`]: im2col + GEMM on the CPU (`cpu.rs`, pooling in `cpu_pool.rs`), direct
//! heap-free loops on `Embedded` (`host.rs`, also the tests' reference), im2col + the PTX GEMM and direct
//! kernels on CUDA (`cuda.rs`, sources in `ptx/conv.cu`). Adaptive average pooling (`adaptive.rs`) and
//! resizing (`resize.rs`) are two matrix products by fixed per-axis matrices; pixel (un)shuffle is a
//! rearrangement (`shuffle.rs`); unfold/fold are depthwise convolutions with one-hot kernels (`unfold.rs`).

mod adaptive;
#[cfg(feature = "alloc")]
mod cpu;
#[cfg(feature = "alloc")]
mod cpu_pool;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "std")] // gradients: used by autograd only
pub(crate) mod grad;
mod host;
mod resize;
mod shuffle;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;
mod unfold;

pub use resize::Interpolation;
pub use tensor::{conv_out_size, conv_transpose_out_size, Conv, Conv2dAxes, ConvGeometry, Pool2d};

use crate::device::Kernels;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;

/// Hyper-parameters of a 2-D convolution or pooling window, shape-erased for the kernels (the tensor API takes
/// them as const generics and checks the output size at build time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dParams {
    /// Step between windows, per spatial axis (height, width).
    pub stride: [usize; 2],
    /// Zeros added on both sides, per spatial axis.
    pub padding: [usize; 2],
    /// Spacing between kernel taps, per spatial axis.
    pub dilation: [usize; 2],
    /// Channel groups (1: dense; C_in: depthwise).
    pub groups: usize,
}

impl Conv2dParams {
    /// Output size of one spatial axis: `(size + 2 padding - dilation (kernel - 1) - 1) / stride + 1`, or `None`
    /// when the window does not fit.
    pub const fn out_size(
        size: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
        dilation: usize,
    ) -> Option<usize> {
        if kernel == 0 || stride == 0 {
            return None;
        }
        let span = dilation * (kernel - 1) + 1;
        if size + 2 * padding < span {
            return None;
        }
        Some((size + 2 * padding - span) / stride + 1)
    }

    /// Output height and width of these windows over an `input` (height, width) with a `kernel` (height, width),
    /// or `None` when a window does not fit.
    pub fn output_hw(&self, input: [usize; 2], kernel: [usize; 2]) -> Option<[usize; 2]> {
        let axis = |i: usize| {
            Self::out_size(
                input[i],
                kernel[i],
                self.stride[i],
                self.padding[i],
                self.dilation[i],
            )
        };
        match (axis(0), axis(1)) {
            (Some(h), Some(w)) => Some([h, w]),
            _ => None,
        }
    }

    /// Output height and width of the transposed convolution of an `input` (height, width) with a `kernel`.
    pub fn transposed_output_hw(&self, input: [usize; 2], kernel: [usize; 2]) -> [usize; 2] {
        let axis = |i: usize| {
            Self::transposed_out_size(
                input[i],
                kernel[i],
                self.stride[i],
                self.padding[i],
                self.dilation[i],
            )
        };
        [axis(0), axis(1)]
    }

    /// Output size of one spatial axis of the transposed convolution (the input size of the convolution it
    /// inverts): `(size - 1) stride - 2 padding + dilation (kernel - 1) + 1`, saturating at 0.
    pub const fn transposed_out_size(
        size: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
        dilation: usize,
    ) -> usize {
        let size = if size == 0 { 1 } else { size };
        ((size - 1) * stride + dilation * (kernel - 1) + 1).saturating_sub(2 * padding)
    }
}

/// 2-D pooling windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The largest element of each window (padding never wins).
    Max,
    /// The mean of each window, padding counted as zeros (PyTorch's `count_include_pad=True`).
    Avg,
}

impl Pool {
    /// Both poolings.
    pub const ALL: [Pool; 2] = [Pool::Max, Pool::Avg];

    /// The op's name, for errors and kernel names (`max_pool2d`, `avg_pool2d`).
    pub const fn name(self) -> &'static str {
        match self {
            Pool::Max => "max_pool2d",
            Pool::Avg => "avg_pool2d",
        }
    }
}

/// The family's kernels, which every device implements; [`crate::device::Device`] requires them beside
/// [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: each kernel initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait ConvKernels: Kernels {
    /// 2-D convolution of an `(N, C, H, W)` input with a `(C_out, C / groups, KH, KW)` weight; `(N, C_out, OH, OW)`
    /// output.
    fn conv2d<T: FloatDType>(
        input: (&Self::Buffer<T>, &Layout),
        weight: (&Self::Buffer<T>, &Layout),
        params: Conv2dParams,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// Transposed 2-D convolution (the gradient of `conv2d` with respect to its input) of an `(N, C, H, W)` input
    /// with a `(C, C_out / groups, KH, KW)` weight; `(N, C_out, OH, OW)` output with
    /// `OH = (H - 1) stride - 2 padding + dilation (KH - 1) + 1`.
    fn conv_transpose2d<T: FloatDType>(
        input: (&Self::Buffer<T>, &Layout),
        weight: (&Self::Buffer<T>, &Layout),
        params: Conv2dParams,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// 2-D pooling of an `(N, C, H, W)` input with square `kernel` windows (`params.groups` is ignored).
    fn pool2d<T: FloatDType>(
        pool: Pool,
        input: (&Self::Buffer<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// The gradient of `conv2d` with respect to its `(C_out, C / groups, KH, KW)` weight (`kernel` = `[KH, KW]`),
    /// from the `(N, C, H, W)` input and the `(N, C_out, OH, OW)` output gradient.
    fn conv2d_weight_grad<T: FloatDType>(
        input: (&Self::Buffer<T>, &Layout),
        grad: (&Self::Buffer<T>, &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// The gradient of max pooling with respect to its `(N, C, H, W)` input: every position holding its window's
    /// maximum (`out_fwd`, the forward result) gets the window's `grad` (ties all do; padding never wins).
    fn max_pool2d_backward<T: FloatDType>(
        input: (&Self::Buffer<T>, &Layout),
        out_fwd: (&Self::Buffer<T>, &Layout),
        grad: (&Self::Buffer<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}
