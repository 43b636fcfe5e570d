//! `unfold` and `fold` (PyTorch's `F.unfold`/`F.fold`, im2col and col2im as public ops): the sliding
//! `KH x KW` patches of each channel as columns, and their sum back into an image. The columns keep their
//! spatial layout, `(N, C KH KW, OH, OW)`; `.reshape()` gives PyTorch's `(N, C KH KW, L)`.
//!
//! - **unfold is a copy**: the columns in order `(N, C, KH, KW, OH, OW)` are one strided view of the
//!   (zero-padded) input, so one copy kernel writes them, a read per value (on `Cpu` and `Cuda`, whose storage
//!   views need no shape).
//! - **fold, and unfold on `Embedded`**, are depthwise convolutions with one-hot kernels (channel `c` gets `KH *
//!   KW` output channels, one per tap): every device runs them with its convolution kernels (`KH * KW`
//!   multiply-adds per value), heap-free on `Embedded`. The gradients are the convolutions' (fold's the unfold,
//!   unfold's the fold).

use super::tensor::{convolve, fits_hw, transposed_fits_hw, ConvGeometry, Direction};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::layout::Layout;
use crate::ops::Conv2dParams;
use crate::shape::{ConstShape, Dims, Rank4, Shape, MAX_RANK};
use crate::tensor::{call, device_ok, written, Tensor};

/// The `(C KH KW, 1, KH, KW)` one-hot kernels: output channel `(c KH + i) KW + j` picks tap `(i, j)`.
fn one_hot_taps<T: FloatDType, D: Device, const CK: usize, const KH: usize, const KW: usize>(
) -> Tensor<T, Rank4<CK, 1, KH, KW>, D> {
    let mut fill = |w: &mut [T]| {
        for (k, x) in w.iter_mut().enumerate() {
            // Element k of kernel r = k / (KH KW) is tap k % (KH KW); it is one where that tap is r's own.
            *x = if k / (KH * KW) % (KH * KW) == k % (KH * KW) {
                T::ONE
            } else {
                T::ZERO
            };
        }
    };
    Tensor::filled_with("unfold", Default::default(), &mut fill)
}

/// `G`'s parameters as a depthwise convolution over `channels` (unfold takes no groups of its own).
const fn depthwise(p: Conv2dParams, channels: usize) -> Conv2dParams {
    Conv2dParams {
        groups: channels,
        output_padding: [0, 0],
        ..p
    }
}

impl<T: FloatDType, const N: usize, const C: usize, const H: usize, const W: usize, D: Device>
    Tensor<T, Rank4<N, C, H, W>, D>
{
    /// The `KH x KW` patches of every channel as `C KH KW` channels of an `(OH, OW)` grid (PyTorch's
    /// `F.unfold` before its last reshape): channel `(c KH + i) KW + j` at `(y, x)` is the input at
    /// `(c, y sh + i dh - ph, x sw + j dw - pw)`, zero in the padding. The geometry's groups must be 1; the
    /// sizes are checked at build time.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let x: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = Tensor::arange();
    /// let cols: Tensor<f32, Rank4<1, 4, 2, 2>, Cpu> = x.unfold::<2, 2, _, _, _, _>(Conv::<1, 0, 1, 1>);
    /// assert_eq!(cols.to_array()[0][0], [[0., 1.], [3., 4.]]); // tap (0, 0) of each 2x2 window
    /// assert_eq!(cols.to_array()[0][3], [[4., 5.], [7., 8.]]); // tap (1, 1)
    /// ```
    pub fn unfold<
        const KH: usize,
        const KW: usize,
        const CK: usize,
        const OH: usize,
        const OW: usize,
        G: ConvGeometry,
    >(
        &self,
        _geometry: G,
    ) -> Tensor<T, Rank4<N, CK, OH, OW>, D> {
        const { check_unfold::<C, H, W, KH, KW, CK, OH, OW>(G::PARAMS) };
        if D::SHAPE_FREE {
            return unfold_by_copy(self, [KH, KW], G::PARAMS);
        }
        let weight = one_hot_taps::<T, D, CK, KH, KW>();
        convolve(
            "unfold",
            self,
            &weight,
            depthwise(G::PARAMS, C),
            Direction::Forward,
        )
    }
}

impl<
        T: FloatDType,
        const N: usize,
        const CK: usize,
        const OH: usize,
        const OW: usize,
        D: Device,
    > Tensor<T, Rank4<N, CK, OH, OW>, D>
{
    /// The inverse arrangement of [`Self::unfold`] (PyTorch's `F.fold`): the columns' values summed back into a
    /// `(N, C, H, W)` image, each pixel collecting every patch that covered it. `H` and `W` must be the sizes
    /// whose unfolding gives `(OH, OW)` exactly (every input row and column reached by a window).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::tensor::Conv;
    /// let ones = Tensor::<f32, Rank4<1, 4, 2, 2>, Cpu>::ones();
    /// let counts: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = ones.fold::<2, 2, _, _, _, _>(Conv::<1, 0, 1, 1>);
    /// assert_eq!(counts.to_array()[0][0], [[1., 2., 1.], [2., 4., 2.], [1., 2., 1.]]); // patches per pixel
    /// ```
    pub fn fold<
        const KH: usize,
        const KW: usize,
        const C: usize,
        const H: usize,
        const W: usize,
        G: ConvGeometry,
    >(
        &self,
        _geometry: G,
    ) -> Tensor<T, Rank4<N, C, H, W>, D> {
        const {
            check_unfold::<C, H, W, KH, KW, CK, OH, OW>(G::PARAMS);
            check_fold::<H, W, KH, KW, OH, OW>(G::PARAMS);
        };
        let weight = one_hot_taps::<T, D, CK, KH, KW>();
        convolve(
            "fold",
            self,
            &weight,
            depthwise(G::PARAMS, C),
            Direction::Transposed,
        )
    }
}

/// [`Tensor::unfold`] as one copy: the input, zero-padded where the geometry pads it, read through the strided
/// view `(N, C, KH, KW, OH, OW)` of its windows (tap `(i, j)` of window `(y, x)` at row `y sh + i dh` and column
/// `x sw + j dw` of the padded input), which is the columns' order. Only for devices with shape-free storage
/// (the padded input has no type): the caller checks [`Device::SHAPE_FREE`].
fn unfold_by_copy<T: FloatDType, D: Device, S: Shape, SO: ConstShape>(
    x: &Tensor<T, S, D>,
    [kh, kw]: [usize; 2],
    p: Conv2dParams,
) -> Tensor<T, SO, D> {
    let [n, c, h, w] = x.layout().dims4();
    let [oh, ow] = p
        .output_hw([h, w], [kh, kw])
        .expect("unfold: window larger than the padded input (checked at build time)");
    // The rows padded, then the columns; each step a fresh shape-free buffer, none without padding.
    // (Held as storage of shape `()`: the device's storage is the same for every shape.)
    let mut storage: Option<D::Storage<T, ()>> = None;
    let mut layout = x.layout();
    for axis in [2, 3] {
        let (before, after) = (p.padding[axis - 2], p.padding_end[axis - 2]);
        if before + after == 0 {
            continue;
        }
        let buffer = storage.as_ref().map_or(x.buffer(), D::buffer);
        let padded = zero_padded::<T, D>((buffer, &layout), axis, [before, after]);
        storage = Some(padded.0);
        layout = padded.1;
    }
    let buffer = storage.as_ref().map_or(x.buffer(), D::buffer);
    let s = layout.strides();
    let windows = Layout::from_parts(
        Dims::from_slice(&[n, c, kh, kw, oh, ow]),
        &[
            s[0],
            s[1],
            p.dilation[0] * s[2],
            p.dilation[1] * s[3],
            p.stride[0] * s[2],
            p.stride[1] * s[3],
        ],
        layout.offset(),
    );
    // SAFETY: the closure is one kernel call, which writes all of its destination and reads none of it.
    unsafe {
        written!(
            Tensor::written_by,
            Default::default(),
            "unfold",
            call::copy::<T, D>((buffer, &windows))
        )
    }
}

/// `src` (a rank-4 view) with `before` and `after` zeros along `axis`, into fresh shape-free storage (held as
/// storage of shape `()`), and its dense layout. The zeros are one stored value read with stride 0.
fn zero_padded<T: FloatDType, D: Device>(
    src: (&D::Buffer<T>, &Layout),
    axis: usize,
    [before, after]: [usize; 2],
) -> (D::Storage<T, ()>, Layout) {
    let dims = *src.1.dims();
    let zero = device_ok(D::full::<T, ()>(1, T::ZERO));
    let slab = |len: usize| {
        let mut d = dims;
        d.as_mut_slice()[axis] = len;
        Layout::from_parts(d, &[0; MAX_RANK], 0)
    };
    let (lead, trail) = (slab(before), slab(after));
    let all = [(D::buffer(&zero), &lead), src, (D::buffer(&zero), &trail)];
    // The zeros' parts only where they are not empty.
    let parts = &all[usize::from(before == 0)..3 - usize::from(after == 0)];
    let mut out = dims;
    out.as_mut_slice()[axis] += before + after;
    // SAFETY: the closure is one kernel call, which writes all of its destination and reads none of it.
    let loose = device_ok(unsafe {
        D::alloc_loose::<T>(
            "unfold",
            out.numel(),
            &mut call::concat::<T, D>(parts, axis),
        )
    });
    (D::tighten(loose), Layout::contiguous(out))
}

/// The build-time rules of unfold: groups 1, `CK = C KH KW`, and `(OH, OW)` the window arithmetic's.
const fn check_unfold<
    const C: usize,
    const H: usize,
    const W: usize,
    const KH: usize,
    const KW: usize,
    const CK: usize,
    const OH: usize,
    const OW: usize,
>(
    p: Conv2dParams,
) {
    assert!(
        p.groups == 1,
        "unfold/fold: the geometry's groups must be 1"
    );
    assert!(
        CK == C * KH * KW,
        "unfold/fold: the columns must have C KH KW channels"
    );
    assert!(
        fits_hw(&p, [H, W], [KH, KW], [OH, OW]),
        "unfold/fold: the grid must be (size + padding before + padding after - dilation (kernel - 1) - 1) / stride + 1 per axis"
    );
}

/// fold's extra rule: the image is exactly what the windows cover (no rows or columns left over by the stride).
const fn check_fold<
    const H: usize,
    const W: usize,
    const KH: usize,
    const KW: usize,
    const OH: usize,
    const OW: usize,
>(
    p: Conv2dParams,
) {
    assert!(
        transposed_fits_hw(&p, [OH, OW], [KH, KW], [H, W]),
        "fold: the image must be exactly covered by the windows: (grid - 1) stride - padding before - padding after + dilation (kernel - 1) + 1"
    );
}

#[cfg(feature = "std")]
mod traced {
    use super::super::traced as conv_traced;
    use super::*;
    use crate::autograd::Traced;

    impl<
            T: FloatDType,
            const N: usize,
            const C: usize,
            const H: usize,
            const W: usize,
            D: Device,
        > Traced<T, Rank4<N, C, H, W>, D>
    {
        /// See [`Tensor::unfold`]; the gradient sums the columns back (a fold).
        pub fn unfold<
            const KH: usize,
            const KW: usize,
            const CK: usize,
            const OH: usize,
            const OW: usize,
            G: ConvGeometry,
        >(
            &self,
            geometry: G,
        ) -> Traced<T, Rank4<N, CK, OH, OW>, D> {
            let value = self.value().unfold::<KH, KW, CK, OH, OW, G>(geometry);
            let weight = Traced::constant(one_hot_taps::<T, D, CK, KH, KW>());
            let p = depthwise(G::PARAMS, C);
            conv_traced::record_conv(self, &weight, value, p, conv_traced::conv2d_rule::<T, D>)
        }
    }

    impl<
            T: FloatDType,
            const N: usize,
            const CK: usize,
            const OH: usize,
            const OW: usize,
            D: Device,
        > Traced<T, Rank4<N, CK, OH, OW>, D>
    {
        /// See [`Tensor::fold`]; the gradient unfolds.
        pub fn fold<
            const KH: usize,
            const KW: usize,
            const C: usize,
            const H: usize,
            const W: usize,
            G: ConvGeometry,
        >(
            &self,
            geometry: G,
        ) -> Traced<T, Rank4<N, C, H, W>, D> {
            let value = self.value().fold::<KH, KW, C, H, W, G>(geometry);
            let weight = Traced::constant(one_hot_taps::<T, D, CK, KH, KW>());
            let p = depthwise(G::PARAMS, C);
            conv_traced::record_conv(
                self,
                &weight,
                value,
                p,
                conv_traced::conv_transpose2d_rule::<T, D>,
            )
        }
    }
}
