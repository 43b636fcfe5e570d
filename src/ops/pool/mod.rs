//! Max and average pooling over 1, 2 or 3 spatial axes (PyTorch's `max_pool1d/2d/3d`, `avg_pool1d/2d/3d`), with
//! the window as a type: [`Pool1d`], [`Pool2d`], [`Pool3d`] (the same kernel, stride and padding on every axis)
//! or [`Pool2dAxes`], [`Pool3dAxes`] (per axis), refined by [`PoolGeometry::ceil_mode`],
//! [`PoolGeometry::exclude_padding`] (PyTorch's `count_include_pad=False`) and [`PoolGeometry::dilation`] (or
//! per axis). The output sizes are in the type and a
//! `const` assertion checks them: `(size + 2 padding - dilation (kernel - 1) - 1) / stride + 1`, rounded up in
//! ceil mode (less one when the last window would start in the trailing padding, as in PyTorch).
//!
//! Every pooling runs the device's 2-D pooling kernel ([`PoolKernels`]): a 1-D pooling as images of height 1, a
//! 3-D one as a pass over (height, width) and a pass over depth (a box window's max and average are those of the
//! two passes). Global pooling is a reduction; adaptive max pooling (`adaptive.rs`) is built from the same kernel
//! and from gathers. The family: the windows (`geometry.rs`), the `Tensor` methods (`tensor.rs`), the traced
//! forms and gradients (`traced.rs`, `grad.rs`), the kernels (`cpu.rs`, `host.rs` for `Embedded`, `cuda.rs`
//! launching `src/ops/pool/pool.cu`).
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::tensor::{Pool2d, Pool2dAxes, PoolGeometry};
//! let x: Tensor<f32, Rank4<1, 1, 4, 5>, Cpu> = Tensor::arange(); // rows 0..5, 5..10, 10..15, 15..20
//! // 2x2 windows, stride 2: the fifth column is left over, unless ceil mode keeps a partial window.
//! let floor: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>);
//! let ceil: Tensor<f32, Rank4<1, 1, 2, 3>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>.ceil_mode());
//! assert_eq!(floor.to_array()[0][0], [[6., 8.], [16., 18.]]);
//! assert_eq!(ceil.to_array()[0][0], [[6., 8., 9.], [16., 18., 19.]]);
//! // A 1x3 window with padding 1 along the width: PyTorch's default divides by 3, `exclude_padding` by the
//! // taps inside the input.
//! let w = Pool2dAxes::<1, 3, 1, 1, 0, 1>;
//! let counted: Tensor<f32, Rank4<1, 1, 4, 5>, Cpu> = x.avg_pool2d(w);
//! let inside: Tensor<f32, Rank4<1, 1, 4, 5>, Cpu> = x.avg_pool2d(w.exclude_padding());
//! assert_eq!(counted.to_array()[0][0][0], [1. / 3., 1., 2., 3., 7. / 3.]);
//! assert_eq!(inside.to_array()[0][0][0], [0.5, 1., 2., 3., 3.5]);
//! ```

mod adaptive;
#[cfg(feature = "alloc")]
mod cpu;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod geometry;
#[cfg(feature = "std")] // autograd
pub(crate) mod grad;
pub(crate) mod host;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

pub use geometry::{
    AvgPoolGeometry, CeilMode, Dilation, DilationAxes, DilationAxes3d, ExcludePadding, Pool1d,
    Pool2d, Pool2dAxes, Pool3d, Pool3dAxes, PoolGeometry,
};

use crate::device::Kernels;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::Conv2dParams;
use crate::shape::size_check::{self, n, t, Window};

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
        Window::along(
            size,
            kernel,
            stride,
            [padding, padding],
            dilation,
            ceil_mode,
        )
        .out()
    }

    /// Axis `axis` of this window over an input of `size`.
    const fn axis_window(&self, axis: usize, size: usize) -> Window {
        let (kernel, stride, padding) = (self.kernel[axis], self.stride[axis], self.padding[axis]);
        Window::along(
            size,
            kernel,
            stride,
            [padding, padding],
            self.dilation[axis],
            self.ceil_mode,
        )
    }

    /// The build-time rules of a pooling call named `op` (its `const` block): every window well formed with
    /// its padding at most half its span (PyTorch's rule), and `out` the window arithmetic's output over
    /// `input`. Panics with the numbers. (An average's window has no dilation: [`AvgPoolGeometry`].)
    pub(crate) const fn check(&self, op: &str, input: [usize; A], out: [usize; A]) {
        let mut i = 0;
        while i < A {
            let axis = match (A, i) {
                (1, _) => "length",
                (3, 0) => "depth",
                (2, 0) | (3, 1) => "height",
                _ => "width",
            };
            let w = self.axis_window(i, input[i]);
            let span = self.dilation[i] * self.kernel[i].saturating_sub(1) + 1;
            if self.kernel[i] > 0 && 2 * self.padding[i] > span {
                size_check::fail(
                    op,
                    &[
                        t("the "),
                        t(axis),
                        t(" padding "),
                        n(self.padding[i]),
                        t(" is more than half the window's span "),
                        n(span),
                        t(" (PyTorch's rule)"),
                    ],
                );
            }
            size_check::window_out(op, axis, w, out[i]);
            i += 1;
        }
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

/// The family's kernels, which every device implements; [`crate::ops::Device`] requires them beside
/// [`Kernels`].
///
/// # Safety
///
/// As for [`Kernels`]: each kernel initialises its whole output whenever it returns `Ok` and never reads it.
pub unsafe trait PoolKernels: Kernels {
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
    /// A 2-D max pooling's values from its `indices` (as [`PoolKernels::max_pool2d_indices`] gives them): each
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
    /// The gradient of max pooling with respect to its `(N, C, H, W)` input (`input` = `[H, W]`): each window's
    /// `grad` goes to the position its index names (`indices`, `row * W + column` within the plane, as
    /// [`PoolKernels::max_pool2d_indices`] gives them: the window's first maximum, or its first NaN), summed where
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
