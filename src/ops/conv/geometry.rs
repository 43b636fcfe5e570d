//! Convolution geometries as types: [`Conv`] (the same stride, padding and dilation on both axes),
//! [`Conv2dAxes`] (per axis), the refinements [`ConvGeometry`]'s methods return (asymmetric padding, a transposed
//! convolution's output padding), and the output-size arithmetic the `const` assertions check.

use crate::ops::Conv2dParams;
use crate::shape::size_check::{self, static_dims, t, Window};
use crate::shape::Shape;
use core::marker::PhantomData;

/// Convolution hyper-parameters: stride, zero padding on both sides, dilation, channel groups.
#[derive(Clone, Copy, Debug, Default)]
pub struct Conv<
    const STRIDE: usize,
    const PADDING: usize,
    const DILATION: usize,
    const GROUPS: usize,
>;

/// Convolution hyper-parameters per spatial axis (height, then width), PyTorch's tuple forms
/// (`stride=(SH, SW), padding=(PH, PW), dilation=(DH, DW)`); [`Conv`] is the same on both axes.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::tensor::Conv2dAxes;
/// let x = Tensor::<f32, Rank4<1, 1, 5, 8>, Cpu>::ones();
/// let w = Tensor::<f32, Rank4<1, 1, 3, 1>, Cpu>::ones();
/// // Height: stride 2, padding 1 -> (5 + 2 - 3) / 2 + 1 = 3; width: stride 1, no padding -> 8.
/// let y: Tensor<f32, Rank4<1, 1, 3, 8>, Cpu> = x.conv2d(&w, Conv2dAxes::<2, 1, 1, 0, 1, 1, 1>);
/// assert_eq!(y.to_array()[0][0][0], [2.; 8]); // the first window overlaps the padding row
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Conv2dAxes<
    const SH: usize,
    const SW: usize,
    const PH: usize,
    const PW: usize,
    const DH: usize,
    const DW: usize,
    const GROUPS: usize,
>;

/// What a convolution takes as its hyper-parameters: [`Conv`] (the same on both axes) or [`Conv2dAxes`] (per
/// axis), refined by [`ConvGeometry::asymmetric_padding`] and, for a transposed convolution,
/// [`ConvGeometry::output_padding`]. The output size is checked against them at build time.
pub trait ConvGeometry: Copy {
    /// The hyper-parameters, shape-erased for the kernels.
    const PARAMS: Conv2dParams;

    /// `OPH` extra output rows and `OPW` extra columns for [`Tensor::conv_transpose2d`](crate::Tensor::conv_transpose2d) (PyTorch's
    /// `output_padding=(OPH, OPW)`): the output is `(H - 1) stride - 2 padding + dilation (KH - 1) + 1 + OPH`
    /// high, the extra rows holding what the windows past the last full one contribute. Each must be smaller than
    /// the axis' stride or its dilation (PyTorch's rule), and a forward convolution takes none.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{Conv, ConvGeometry};
    /// let x = Tensor::<f32, Rank4<1, 1, 2, 2>, Cpu>::ones();
    /// let w = Tensor::<f32, Rank4<1, 1, 3, 3>, Cpu>::ones();
    /// // Stride 2, padding 1: a 3x3 output, or 4x4 with output padding 1 (the size a 4x4 input of the
    /// // stride-2 convolution this one inverts had).
    /// let y: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = x.conv_transpose2d(&w, Conv::<2, 1, 1, 1>);
    /// let z: Tensor<f32, Rank4<1, 1, 4, 4>, Cpu> =
    ///     x.conv_transpose2d(&w, Conv::<2, 1, 1, 1>.output_padding::<1, 1>());
    /// assert_eq!(y.to_array()[0][0], [[1., 2., 1.], [2., 4., 2.], [1., 2., 1.]]);
    /// assert_eq!(
    ///     z.to_array()[0][0],
    ///     [[1., 2., 1., 1.], [2., 4., 2., 2.], [1., 2., 1., 1.], [1., 2., 1., 1.]]
    /// );
    /// ```
    fn output_padding<const OPH: usize, const OPW: usize>(self) -> OutputPadding<Self, OPH, OPW> {
        OutputPadding(self)
    }

    /// Different zero padding on each side: `TOP` rows before and `BOTTOM` after, `LEFT` columns before and
    /// `RIGHT` after (ONNX's `pads = [TOP, LEFT, BOTTOM, RIGHT]`), in place of the geometry's own padding. The
    /// output is `(size + before + after - dilation (kernel - 1) - 1) / stride + 1` along each axis, and taps
    /// are placed from the leading padding. [`same_padding`] gives ONNX's `SAME_UPPER` / TensorFlow's `"SAME"`
    /// split. A 1-D convolution pads its length like the width: give `BEGIN, END` on both axes
    /// (`asymmetric_padding::<BEGIN, END, BEGIN, END>()`).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::{same_padding, Conv, ConvGeometry};
    /// let x: Tensor<f32, Rank4<1, 1, 1, 4>, Cpu> = Tensor::from_array([[[[1., 2., 3., 4.]]]]);
    /// let w = Tensor::<f32, Rank4<1, 1, 1, 2>, Cpu>::ones();
    /// // An even kernel keeps the size with one zero after the row (and none before): [1+2, 2+3, 3+4, 4+0].
    /// const P: [usize; 2] = same_padding(4, 2, 1, 1);
    /// let y: Tensor<f32, Rank4<1, 1, 1, 4>, Cpu> =
    ///     x.conv2d(&w, Conv::<1, 0, 1, 1>.asymmetric_padding::<0, 0, { P[0] }, { P[1] }>());
    /// assert_eq!(y.to_array()[0][0][0], [3., 5., 7., 4.]);
    /// ```
    fn asymmetric_padding<
        const TOP: usize,
        const BOTTOM: usize,
        const LEFT: usize,
        const RIGHT: usize,
    >(
        self,
    ) -> AsymmetricPadding<Self, TOP, BOTTOM, LEFT, RIGHT> {
        AsymmetricPadding(self)
    }
}

/// A geometry with different padding on each side: see [`ConvGeometry::asymmetric_padding`].
#[derive(Clone, Copy, Debug, Default)]
pub struct AsymmetricPadding<
    G,
    const TOP: usize,
    const BOTTOM: usize,
    const LEFT: usize,
    const RIGHT: usize,
>(pub G);

impl<
        G: ConvGeometry,
        const TOP: usize,
        const BOTTOM: usize,
        const LEFT: usize,
        const RIGHT: usize,
    > ConvGeometry for AsymmetricPadding<G, TOP, BOTTOM, LEFT, RIGHT>
{
    const PARAMS: Conv2dParams = Conv2dParams {
        padding: [TOP, LEFT],
        padding_end: [BOTTOM, RIGHT],
        ..G::PARAMS
    };
}

/// A geometry a 1-D convolution can take: the same on both axes, since the length reads the width's part
/// ([`Conv`], a [`Conv2dAxes`] with equal axes, refined by [`ConvGeometry::asymmetric_padding`] with the same
/// `BEGIN, END` twice or [`ConvGeometry::output_padding`] with the same value twice).
#[diagnostic::on_unimplemented(
    message = "a 1-D convolution needs a geometry that is the same on both axes; `{Self}` is not",
    label = "its height and width parts differ",
    note = "use a `Conv`; asymmetric padding as `.asymmetric_padding::<BEGIN, END, BEGIN, END>()`, output padding as `.output_padding::<P, P>()`"
)]
pub trait Conv1dGeometry: ConvGeometry {}

#[diagnostic::do_not_recommend]
impl<const STRIDE: usize, const PADDING: usize, const DILATION: usize, const GROUPS: usize>
    Conv1dGeometry for Conv<STRIDE, PADDING, DILATION, GROUPS>
{
}
#[diagnostic::do_not_recommend]
impl<const S: usize, const P: usize, const D: usize, const GROUPS: usize> Conv1dGeometry
    for Conv2dAxes<S, S, P, P, D, D, GROUPS>
{
}
#[diagnostic::do_not_recommend]
impl<G: Conv1dGeometry, const BEGIN: usize, const END: usize> Conv1dGeometry
    for AsymmetricPadding<G, BEGIN, END, BEGIN, END>
{
}
#[diagnostic::do_not_recommend]
impl<G: Conv1dGeometry, const P: usize> Conv1dGeometry for OutputPadding<G, P, P> {}

/// The `[before, after]` zero padding that makes a convolution's output `ceil(size / stride)` long (ONNX's
/// `auto_pad = SAME_UPPER`, TensorFlow's `padding="SAME"`): `(ceil(size / stride) - 1) stride + dilation (kernel
/// - 1) + 1 - size` zeros in all, the odd one after. For [`ConvGeometry::asymmetric_padding`], as a `const`
/// expression of literals or constants. With stride 1 and an odd kernel it is PyTorch's `padding="same"`.
pub const fn same_padding(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> [usize; 2] {
    assert!(
        size > 0 && kernel > 0 && stride > 0 && dilation > 0,
        "same_padding: size, kernel, stride and dilation must be positive"
    );
    let out = size.div_ceil(stride);
    let total = ((out - 1) * stride + dilation * (kernel - 1) + 1).saturating_sub(size);
    [total / 2, total - total / 2]
}

/// A transposed convolution's geometry with output padding: see [`ConvGeometry::output_padding`].
#[derive(Clone, Copy, Debug, Default)]
pub struct OutputPadding<G, const OPH: usize, const OPW: usize>(pub G);

impl<G: ConvGeometry, const OPH: usize, const OPW: usize> ConvGeometry
    for OutputPadding<G, OPH, OPW>
{
    const PARAMS: Conv2dParams = Conv2dParams {
        output_padding: [OPH, OPW],
        ..G::PARAMS
    };
}

impl<const STRIDE: usize, const PADDING: usize, const DILATION: usize, const GROUPS: usize>
    ConvGeometry for Conv<STRIDE, PADDING, DILATION, GROUPS>
{
    const PARAMS: Conv2dParams = Conv2dParams {
        stride: [STRIDE; 2],
        padding: [PADDING; 2],
        padding_end: [PADDING; 2],
        dilation: [DILATION; 2],
        groups: GROUPS,
        output_padding: [0, 0],
    };
}

impl<
        const SH: usize,
        const SW: usize,
        const PH: usize,
        const PW: usize,
        const DH: usize,
        const DW: usize,
        const GROUPS: usize,
    > ConvGeometry for Conv2dAxes<SH, SW, PH, PW, DH, DW, GROUPS>
{
    const PARAMS: Conv2dParams = Conv2dParams {
        stride: [SH, SW],
        padding: [PH, PW],
        padding_end: [PH, PW],
        dilation: [DH, DW],
        groups: GROUPS,
        output_padding: [0, 0],
    };
}

/// The output size of a convolution or pooling along one axis, `(size + 2 padding - dilation (kernel - 1) - 1)
/// / stride + 1`, for writing an output type without doing the arithmetic by hand (a `const` expression of
/// literals or constants; stable Rust cannot evaluate it over a generic parameter). Panics (a build error in a
/// type) when the window does not fit.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::tensor::{conv_out_size, Conv};
/// const OUT: usize = conv_out_size(32, 3, 2, 1, 1); // 16
/// let x = Tensor::<f32, Rank4<1, 3, 32, 32>, Cpu>::zeros();
/// let w = Tensor::<f32, Rank4<8, 3, 3, 3>, Cpu>::zeros();
/// let y: Tensor<f32, Rank4<1, 8, OUT, { conv_out_size(32, 3, 2, 1, 1) }>, Cpu> =
///     x.conv2d(&w, Conv::<2, 1, 1, 1>);
/// ```
pub const fn conv_out_size(
    size: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
) -> usize {
    match Conv2dParams::out_size(size, kernel, stride, padding, dilation) {
        Some(out) => out,
        None => panic!("conv_out_size: the window does not fit (kernel or stride 0, or a kernel wider than the padded input)"),
    }
}

/// The output size of a transposed convolution along one axis, `(size - 1) stride - 2 padding + dilation
/// (kernel - 1) + 1` (see [`conv_out_size`]). Panics when it is not positive.
pub const fn conv_transpose_out_size(
    size: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
) -> usize {
    match Window::along(size, kernel, stride, [padding, padding], dilation, false).transposed_out()
    {
        Some(out) => out,
        None => panic!("conv_transpose_out_size: the output would be empty"),
    }
}

/// The parameters of a 1-D convolution (the width axis of a geometry the same on both axes) as those of the
/// 2-D one of height 1 it is computed as.
pub(super) const fn along_length(p: Conv2dParams) -> Conv2dParams {
    Conv2dParams {
        stride: [1, p.stride[1]],
        padding: [0, p.padding[1]],
        padding_end: [0, p.padding_end[1]],
        dilation: [1, p.dilation[1]],
        groups: p.groups,
        output_padding: [0, p.output_padding[1]],
    }
}

/// Panics unless a forward convolution's geometry has no output padding (it belongs to transposed ones).
pub(super) const fn no_output_padding(op: &str, p: &Conv2dParams) {
    if p.output_padding[0] != 0 || p.output_padding[1] != 0 {
        size_check::fail(
            op,
            &[t("output_padding applies to transposed convolutions only")],
        );
    }
}

/// The build-time rules of a 1-D or 2-D convolution (transposed when `TRANSPOSED`) of an input of shape `X` by a
/// weight of shape `Wt` into an output of shape `Y`, with geometry `G`: channels and groups, each spatial output
/// size, output padding. An associated `const`, named by the tensor method and by its traced twin alike, so a
/// mistake is one error and its last note names the user's call whichever they made. Its uses are kept on one
/// line (`#[rustfmt::skip]`): a failing check's error quotes the use.
pub(crate) struct ConvFits<G, X, Wt, Y, const TRANSPOSED: bool>(PhantomData<(G, X, Wt, Y)>);

impl<G: ConvGeometry, X: Shape, Wt: Shape, Y: Shape, const TRANSPOSED: bool>
    ConvFits<G, X, Wt, Y, TRANSPOSED>
{
    pub(crate) const OK: () = {
        let (x, w, y) = (static_dims::<X>(), static_dims::<Wt>(), static_dims::<Y>());
        let p = G::PARAMS;
        let one_d = X::RANK == 3;
        let op = match (one_d, TRANSPOSED) {
            (false, false) => "conv2d",
            (false, true) => "conv_transpose2d",
            (true, false) => "conv1d",
            (true, true) => "conv_transpose1d",
        };
        // Forward weights are (C_OUT, C_IN / G, ..), transposed ones (C_IN, C_OUT / G, ..).
        size_check::conv_channels(op, TRANSPOSED, p.groups, x[1], w[1], y[1]);
        // A 1-D convolution is the width part of the 2-D one: its length is axis 2, the geometry's axis 1.
        let axes: &[(usize, usize, &str)] = if one_d {
            &[(2, 1, "length")]
        } else {
            &[(2, 0, "height"), (3, 1, "width")]
        };
        let mut i = 0;
        while i < axes.len() {
            let (dim, geometry_axis, name) = axes[i];
            let window = p.window(geometry_axis, x[dim], w[dim]);
            if TRANSPOSED {
                let extra = p.output_padding[geometry_axis];
                size_check::transposed_out(op, name, window, extra, y[dim]);
            } else {
                size_check::window_out(op, name, window, y[dim]);
            }
            i += 1;
        }
        if !TRANSPOSED {
            no_output_padding(op, &p);
        }
    };
}
