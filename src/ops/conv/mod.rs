//! Convolution and pooling on NCHW tensors: the `Tensor` methods with their hyper-parameters as const generics
//! (`tensor.rs`), the gradients built from the forward kernels (`grad.rs`) and the traced forms (`traced.rs`);
//! the device side is [`ConvKernels`]: im2col + GEMM on the CPU (`cpu.rs`, pooling in `cpu_pool.rs`), direct
//! heap-free loops on `Embedded` (`host.rs`, also the tests' reference), im2col + the PTX GEMM and direct
//! kernels on CUDA (`cuda.rs`, sources in `ptx/conv.cu`). Adaptive max pooling (`adaptive.rs`) runs the pooling
//! kernels and gathers; pixel (un)shuffle is a rearrangement (`shuffle.rs`); unfold/fold (`unfold.rs`) are
//! kernels of their own (`columns.rs` on the host). Resizing and adaptive average pooling are the `resample`
//! family's.

mod adaptive;
mod columns;
mod conv3d;
#[cfg(feature = "alloc")]
mod cpu;
#[cfg(feature = "alloc")]
mod cpu_pool;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "std")] // gradients: used by autograd only
pub(crate) mod grad;
mod host;
mod pool;
mod shuffle;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;
mod unfold;

pub use conv3d::{AsymmetricPadding3d, Conv3dAxes, Conv3dGeometry, Conv3dParams};
pub use pool::{
    CeilMode, Dilation, DilationAxes, DilationAxes3d, ExcludePadding, Pool1d, Pool2d, Pool2dAxes,
    Pool3d, Pool3dAxes, PoolGeometry,
};
pub use tensor::{
    conv_out_size, conv_transpose_out_size, same_padding, AsymmetricPadding, Conv, Conv2dAxes,
    ConvGeometry, OutputPadding,
};

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

/// A pooling window per spatial axis (`A` axes: 1, 2 or 3), shape-erased for the kernels; the tensor API builds
/// it from a [`PoolGeometry`] type and checks the output size against it at build time. Kernels see `A = 2`:
/// 1-D pools run as 2-D pools of height 1, 3-D pools as a 2-D pool over (height, width) and one over depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolParams<const A: usize> {
    /// Window size per axis.
    pub kernel: [usize; A],
    /// Step between windows per axis.
    pub stride: [usize; A],
    /// Implicit padding on both sides per axis (never the max; in averages, see `count_include_pad`).
    pub padding: [usize; A],
    /// Spacing between window taps per axis (max pooling only; average pooling requires 1, as in PyTorch).
    pub dilation: [usize; A],
    /// Output sizes rounded up instead of down (PyTorch's `ceil_mode`), so a last partial window is kept when it
    /// starts inside the input or its leading padding.
    pub ceil_mode: bool,
    /// Averages divide by the window's size clipped to the padded input (PyTorch's default,
    /// `count_include_pad=True`) instead of by the number of taps inside the input.
    pub count_include_pad: bool,
}

impl<const A: usize> PoolParams<A> {
    /// A window with `kernel`, `stride` and `padding` on every axis, no dilation, PyTorch's default rounding and
    /// average divisor.
    pub const fn square(kernel: usize, stride: usize, padding: usize) -> Self {
        PoolParams {
            kernel: [kernel; A],
            stride: [stride; A],
            padding: [padding; A],
            dilation: [1; A],
            ceil_mode: false,
            count_include_pad: true,
        }
    }

    /// Output size of one axis: `(size + 2 padding - dilation (kernel - 1) - 1) / stride + 1`, the division
    /// rounded up with `ceil_mode` (then one less when the last window would start in the trailing padding), or
    /// `None` when the window does not fit the padded input.
    pub const fn out_size(
        size: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
        dilation: usize,
        ceil_mode: bool,
    ) -> Option<usize> {
        if kernel == 0 || stride == 0 || dilation == 0 {
            return None;
        }
        let span = dilation * (kernel - 1) + 1;
        if size + 2 * padding < span {
            return None;
        }
        let room = size + 2 * padding - span;
        let mut out = if ceil_mode {
            room.div_ceil(stride)
        } else {
            room / stride
        } + 1;
        if ceil_mode && (out - 1) * stride >= size + padding {
            out -= 1;
        }
        Some(out)
    }

    /// Whether the window is well formed: positive kernel, stride and dilation, and padding at most half the
    /// dilated kernel on every axis (PyTorch's rule, which keeps every window on at least one input element).
    pub const fn is_valid(&self) -> bool {
        let mut i = 0;
        while i < A {
            if self.kernel[i] == 0 || self.stride[i] == 0 || self.dilation[i] == 0 {
                return false;
            }
            if 2 * self.padding[i] > self.dilation[i] * (self.kernel[i] - 1) + 1 {
                return false;
            }
            i += 1;
        }
        true
    }

    /// Whether every dilation is 1.
    pub const fn undilated(&self) -> bool {
        let mut i = 0;
        while i < A {
            if self.dilation[i] != 1 {
                return false;
            }
            i += 1;
        }
        true
    }

    /// Whether pooling an input of sizes `input` gives outputs of sizes `out` (usable in `const` assertions).
    pub const fn fits(&self, input: [usize; A], out: [usize; A]) -> bool {
        let mut i = 0;
        while i < A {
            let size = Self::out_size(
                input[i],
                self.kernel[i],
                self.stride[i],
                self.padding[i],
                self.dilation[i],
                self.ceil_mode,
            );
            match size {
                Some(o) if o == out[i] => {}
                _ => return false,
            }
            i += 1;
        }
        true
    }

    /// Output sizes over an input of sizes `input`, or `None` when a window does not fit.
    pub fn output(&self, input: [usize; A]) -> Option<[usize; A]> {
        let mut out = [0; A];
        for (i, o) in out.iter_mut().enumerate() {
            *o = Self::out_size(
                input[i],
                self.kernel[i],
                self.stride[i],
                self.padding[i],
                self.dilation[i],
                self.ceil_mode,
            )?;
        }
        Some(out)
    }

    /// The divisor of average window `o` along `axis` of an input of `size`: the window clipped to the padded
    /// input (`count_include_pad`) or to the input. An average's divisor is the product over its axes.
    pub fn avg_count(&self, axis: usize, o: usize, size: usize) -> usize {
        let span = self.dilation[axis] * (self.kernel[axis] - 1) + 1;
        let start = o * self.stride[axis]; // in padded coordinates
        let pad = self.padding[axis];
        if self.count_include_pad {
            (start + span).min(size + 2 * pad) - start
        } else {
            (start + span)
                .min(size + pad)
                .saturating_sub(start.max(pad))
        }
    }
}

impl PoolParams<2> {
    /// The window's placement as a convolution's (the tap arithmetic the families share).
    pub const fn window(&self) -> Conv2dParams {
        Conv2dParams {
            stride: self.stride,
            padding: self.padding,
            padding_end: self.padding,
            dilation: self.dilation,
            groups: 1,
            output_padding: [0, 0],
        }
    }

    /// Whether every window's average has the divisor `kernel height * kernel width` over an input of `input`
    /// sizes (no window clipped by the input when padding is not counted, none reaching past the trailing
    /// padding in `ceil_mode`): the gradient is then one constant.
    pub fn uniform_divisor(&self, input: [usize; 2]) -> bool {
        let Some(out) = self.output(input) else {
            return true;
        };
        (0..2).all(|axis| {
            (0..out[axis]).all(|o| self.avg_count(axis, o, input[axis]) == self.kernel[axis])
        })
    }
}

impl PoolParams<1> {
    /// The same window along the width of height-1 images.
    pub const fn as_2d(&self) -> PoolParams<2> {
        PoolParams {
            kernel: [1, self.kernel[0]],
            stride: [1, self.stride[0]],
            padding: [0, self.padding[0]],
            dilation: [1, self.dilation[0]],
            ceil_mode: self.ceil_mode,
            count_include_pad: self.count_include_pad,
        }
    }
}

impl PoolParams<3> {
    /// The window split into its (height, width) part and its depth part (as the height of width-1 images): a
    /// box window's max and average are those of the two passes in turn (an average's divisor is a product of
    /// per-axis counts).
    pub const fn split(&self) -> (PoolParams<2>, PoolParams<2>) {
        let plane = PoolParams {
            kernel: [self.kernel[1], self.kernel[2]],
            stride: [self.stride[1], self.stride[2]],
            padding: [self.padding[1], self.padding[2]],
            dilation: [self.dilation[1], self.dilation[2]],
            ceil_mode: self.ceil_mode,
            count_include_pad: self.count_include_pad,
        };
        let depth = PoolParams {
            kernel: [self.kernel[0], 1],
            stride: [self.stride[0], 1],
            padding: [self.padding[0], 0],
            dilation: [self.dilation[0], 1],
            ceil_mode: self.ceil_mode,
            count_include_pad: self.count_include_pad,
        };
        (plane, depth)
    }
}

/// 2-D pooling windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The largest element of each window (padding never wins).
    Max,
    /// The mean of each window (padding counted as zeros, or left out: [`PoolParams::count_include_pad`]).
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
    /// 2-D pooling of an `(N, C, H, W)` input; `(N, C, OH, OW)` output with the sizes `params.output` gives.
    fn pool2d<T: FloatDType>(
        pool: Pool,
        input: (&Self::Buffer<T>, &Layout),
        params: PoolParams<2>,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
    /// Where each window of a 2-D max pooling found its maximum: the index `row * W + column` within the input's
    /// `(H, W)` plane (PyTorch's `return_indices`), the first of equal values in (row, column) order, the first
    /// NaN when the window holds one.
    fn max_pool2d_indices<T: FloatDType>(
        input: (&Self::Buffer<T>, &Layout),
        params: PoolParams<2>,
        out: &mut Self::Out<u32>,
    ) -> Result<()>;
    /// A 2-D max pooling's values from its `indices` (as [`ConvKernels::max_pool2d_indices`] gives them): each
    /// window's value is the input's element at its index, which equals `pool2d(Pool::Max, ..)`'s. The host
    /// devices read that one element per window, so a forward pass that needs the indices too (training) folds
    /// each window once; a device may pool again instead (CUDA does: a gather there would check the indices with a
    /// host synchronisation).
    fn max_pool2d_at<T: FloatDType>(
        input: (&Self::Buffer<T>, &Layout),
        indices: (&Self::Buffer<u32>, &Layout),
        params: PoolParams<2>,
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
    /// The gradient of max pooling with respect to its `(N, C, H, W)` input (`input` = `[H, W]`): each window's
    /// `grad` goes to the position its index names (`indices`, `row * W + column` within the plane, as
    /// [`ConvKernels::max_pool2d_indices`] gives them: the window's first maximum, or its first NaN), summed where
    /// windows share a position (PyTorch's rule). Each index must lie inside its own window: devices that gather
    /// over the windows holding a position would miss one that does not.
    fn max_pool2d_backward<T: FloatDType>(
        indices: (&Self::Buffer<u32>, &Layout),
        grad: (&Self::Buffer<T>, &Layout),
        input: [usize; 2],
        params: PoolParams<2>,
        out: &mut Self::Out<T>,
    ) -> Result<()>;
}
