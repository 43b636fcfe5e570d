//! Convolution on NCHW tensors: the `Tensor` methods with their hyper-parameters as const generics
//! (`tensor.rs`), the gradients built from the forward kernels (`grad.rs`) and the traced forms (`traced.rs`);
//! the device side is [`ConvKernels`]: im2col + GEMM on the CPU (`cpu.rs`), direct heap-free loops on
//! `Embedded` (`host.rs`, also the tests' reference), im2col + the PTX GEMM and direct kernels on CUDA
//! (`cuda.rs`, sources in `src/ops/conv/conv.cu`). Pixel (un)shuffle is a rearrangement (`shuffle.rs`); unfold/fold
//! (`unfold.rs`) are kernels of their own (`columns.rs` on the host); nearest upsampling is a strided copy.
//! Pooling is the `pool` family's, resizing and adaptive average pooling the `resample` family's.

mod columns;
mod conv3d;
#[cfg(feature = "alloc")]
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod geometry;
#[cfg(feature = "std")] // gradients: used by autograd only
pub(crate) mod grad;
pub(crate) mod host;
mod shuffle;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;
mod unfold;

pub use conv3d::{AsymmetricPadding3d, Conv3dAxes, Conv3dGeometry, Conv3dParams};
pub use geometry::{
    conv_out_size, conv_transpose_out_size, same_padding, AsymmetricPadding, Conv, Conv1dGeometry,
    Conv2dAxes, ConvGeometry, OutputPadding,
};

use crate::device::Kernels;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::size_check::Window;

/// Hyper-parameters of a 2-D convolution or pooling window, shape-erased for the kernels (the tensor API takes
/// them as const generics and checks the output size at build time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dParams {
    /// Step between windows, per spatial axis (height, width).
    pub stride: [usize; 2],
    /// Zeros added before each spatial axis (top, left); on both sides unless `padding_end` differs.
    pub padding: [usize; 2],
    /// Zeros added after each spatial axis (bottom, right): the same as `padding` except for asymmetric padding
    /// (`ConvGeometry::asymmetric_padding`). Only the output's size depends on it: taps are placed from the
    /// leading padding.
    pub padding_end: [usize; 2],
    /// Spacing between kernel taps, per spatial axis.
    pub dilation: [usize; 2],
    /// Channel groups (1: dense; C_in: depthwise).
    pub groups: usize,
    /// Extra output rows and columns of a transposed convolution, past its last full window (PyTorch's
    /// `output_padding`, which picks among the input sizes a strided convolution maps to one output size); 0
    /// for everything else.
    pub output_padding: [usize; 2],
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
        padded_out_size(size, kernel, stride, 2 * padding, dilation)
    }

    /// Output size along spatial `axis` (0: height, 1: width) of these windows over an input of `size` with a
    /// kernel of `kernel`, both paddings counted, or `None` when the window does not fit.
    pub const fn axis_out_size(&self, axis: usize, size: usize, kernel: usize) -> Option<usize> {
        padded_out_size(
            size,
            kernel,
            self.stride[axis],
            self.padding[axis] + self.padding_end[axis],
            self.dilation[axis],
        )
    }

    /// Output height and width of these windows over an `input` (height, width) with a `kernel` (height, width),
    /// or `None` when a window does not fit.
    pub fn output_hw(&self, input: [usize; 2], kernel: [usize; 2]) -> Option<[usize; 2]> {
        match (
            self.axis_out_size(0, input[0], kernel[0]),
            self.axis_out_size(1, input[1], kernel[1]),
        ) {
            (Some(h), Some(w)) => Some([h, w]),
            _ => None,
        }
    }

    /// Output height and width of the transposed convolution of an `input` (height, width) with a `kernel`,
    /// `output_padding` included.
    pub fn transposed_output_hw(&self, input: [usize; 2], kernel: [usize; 2]) -> [usize; 2] {
        let axis = |i: usize| {
            self.axis_transposed_out_size(i, input[i], kernel[i]) + self.output_padding[i]
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
        padded_transposed_out_size(size, kernel, stride, 2 * padding, dilation)
    }

    /// [`Conv2dParams::transposed_out_size`] along spatial `axis`, both paddings counted (`output_padding` not
    /// included).
    pub const fn axis_transposed_out_size(&self, axis: usize, size: usize, kernel: usize) -> usize {
        padded_transposed_out_size(
            size,
            kernel,
            self.stride[axis],
            self.padding[axis] + self.padding_end[axis],
            self.dilation[axis],
        )
    }

    /// Spatial `axis` (0: height, 1: width) of these windows over an input of `size` with a kernel of
    /// `kernel`, for the build-time checks.
    pub(crate) const fn window(&self, axis: usize, size: usize, kernel: usize) -> Window {
        let padding = [self.padding[axis], self.padding_end[axis]];
        Window::along(
            size,
            kernel,
            self.stride[axis],
            padding,
            self.dilation[axis],
            false,
        )
    }

    /// Whether each axis is padded alike on both sides.
    pub const fn symmetric(&self) -> bool {
        self.padding[0] == self.padding_end[0] && self.padding[1] == self.padding_end[1]
    }
}

/// Output size of one axis padded by `padding` zeros in all: `(size + padding - dilation (kernel - 1) - 1) /
/// stride + 1`.
const fn padded_out_size(
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
    if size + padding < span {
        return None;
    }
    Some((size + padding - span) / stride + 1)
}

/// Output size of one axis of a transposed convolution trimmed by `padding` in all: `(size - 1) stride -
/// padding + dilation (kernel - 1) + 1`, saturating at 0.
const fn padded_transposed_out_size(
    size: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
) -> usize {
    let size = if size == 0 { 1 } else { size };
    ((size - 1) * stride + dilation * (kernel - 1) + 1).saturating_sub(padding)
}

/// The family's kernels, which every device implements; [`crate::ops::Device`] requires them beside
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
    /// The gradient of `conv2d` with respect to its `(C_out, C / groups, KH, KW)` weight (`kernel` = `[KH, KW]`),
    /// from the `(N, C, H, W)` input and the `(N, C_out, OH, OW)` output gradient.
    fn conv2d_weight_grad<T: FloatDType>(
        input: (&Self::Buffer<T>, &Layout),
        grad: (&Self::Buffer<T>, &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// unfold (im2col as an op): the dense `(N, C KH KW, OH, OW)` columns of the `(N, C, H, W)` input for
    /// `kernel` = `[KH, KW]` windows placed by `params` (groups 1): channel `(c KH + i) KW + j` at `(y, x)` is the
    /// input at `(c, y sh + i dh - ph, x sw + j dw - pw)`, zero in the padding; `(OH, OW)` as
    /// [`Conv2dParams::output_hw`] gives them.
    fn unfold<T: FloatDType>(
        input: (&Self::Buffer<T>, &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// fold (col2im as an op), the adjoint of [`ConvKernels::unfold`]: the `(N, C KH KW, OH, OW)` columns summed
    /// into the dense `(N, C, H, W)` image (`image` = `[H, W]`), each column value into the one pixel unfold reads
    /// it from, the values of a pixel summed in tap order, so that a value reaches no other pixel (a NaN stays
    /// where it is).
    fn fold<T: FloatDType>(
        columns: (&Self::Buffer<T>, &Layout),
        kernel: [usize; 2],
        image: [usize; 2],
        params: Conv2dParams,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}
