//! Pooling (fixed windows, and adaptive to an output size), resizing and flattening layers for `(N, C, ...)` inputs.
//!
//! As for the convolution layers, stable Rust cannot compute an output size in a type, so these layers name their
//! output size (`OH`, `OW`, or the flattened width) as const parameters, checked against the input's by a `const`
//! assertion when the model is built (`cargo build`).

use super::{layer, Module, Parameters};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::ops::Interpolation;
use crate::shape::size_check::{self, n, t};
use crate::shape::{Const, Rank1, Rank2, Rank3, Rank4, Rank5};
use crate::tensor::{AvgPoolGeometry, Pool2d, PoolGeometry};

macro_rules! pool_layer {
    ($(#[$m:meta])* $name:ident => $method:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, Parameters)]
        pub struct $name<
            const KERNEL: usize,
            const STRIDE: usize,
            const PADDING: usize,
            const OH: usize,
            const OW: usize,
        >;

        #[layer]
        impl<
                const KERNEL: usize,
                const STRIDE: usize,
                const PADDING: usize,
                const OH: usize,
                const OW: usize,
                T: FloatDType,
                const N: usize,
                const C: usize,
                const H: usize,
                const W: usize,
                D: Device,
            > Module<Value<T, Rank4<N, C, H, W>, D>> for $name<KERNEL, STRIDE, PADDING, OH, OW>
        {
            type Output = Value<T, Rank4<N, C, OH, OW>, D>;
            fn forward(&self, x: Value<T, Rank4<N, C, H, W>, D>) -> Self::Output {
                x.$method(Pool2d::<KERNEL, STRIDE, PADDING>)
            }
        }

    };
}

pool_layer!(
    /// Max pooling over `KERNEL x KERNEL` windows, output `OH x OW`.
    MaxPool2d => max_pool2d
);
pool_layer!(
    /// Average pooling over `KERNEL x KERNEL` windows (padding counted), output `OH x OW`.
    AvgPool2d => avg_pool2d
);

/// `Module` for a window-generic pooling layer: one impl per rank (1-D on `(N, C, L)`, 2-D on `(N, C, H, W)`, 3-D
/// on `(N, C, D, H, W)`), each for tensors and traced values alike (`#[layer]`).
macro_rules! window_pool_layer {
    ($name:ident, $geometry:ident, $p1:ident, $p2:ident, $p3:ident) => {
        window_pool_layer!(@kinds $name, $p1, $geometry<1>, Rank1<OL>, Rank3<N, C, L>, Rank3<N, C, OL>,
            [const OL: usize, const N: usize, const C: usize, const L: usize]);
        window_pool_layer!(@kinds $name, $p2, $geometry<2>, Rank2<OH, OW>, Rank4<N, C, H, W>,
            Rank4<N, C, OH, OW>,
            [const OH: usize, const OW: usize, const N: usize, const C: usize, const H: usize, const W: usize]);
        window_pool_layer!(@kinds $name, $p3, $geometry<3>, Rank3<OD, OH, OW>, Rank5<N, C, DP, H, W>,
            Rank5<N, C, OD, OH, OW>,
            [const OD: usize, const OH: usize, const OW: usize, const N: usize, const C: usize,
             const DP: usize, const H: usize, const W: usize]);

    };
    (@kinds $name:ident, $method:ident, $geometry:path, $out:ty, $x:ty, $y:ty, [$($consts:tt)*]) => {
        #[layer]
        impl<G: $geometry, T: FloatDType, D: Device, $($consts)*> Module<Value<T, $x, D>> for $name<G, $out> {
            type Output = Value<T, $y, D>;
            fn forward(&self, x: Value<T, $x, D>) -> Self::Output {
                x.$method(self.window)
            }
        }
    };
}

/// Max pooling with any window: [`Pool1d`](crate::tensor::Pool1d), [`Pool2d`],
/// [`Pool2dAxes`](crate::tensor::Pool2dAxes), [`Pool3d`](crate::tensor::Pool3d) or
/// [`Pool3dAxes`](crate::tensor::Pool3dAxes), refined by `.ceil_mode()` and a dilation (`.dilation::<D>()`, or
/// per axis) (PyTorch's `MaxPool1d/2d/3d(kernel_size, stride, padding, dilation, ceil_mode)`). `O`
/// names the output's spatial sizes, `Rank1<OL>`, `Rank2<OH, OW>` or `Rank3<OD, OH, OW>` (stable Rust cannot
/// compute them in a type), checked against the input when the model is built. [`MaxPool2d`] is the square
/// 2-D form.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{MaxPool, Module};
/// use typed_tensor::tensor::{Pool1d, Pool2dAxes, PoolGeometry};
/// // 3x2 windows, stride (2, 1), ceil mode: a 5x4 input gives (ceil(2 / 2) + 1) x 3 = 2x3.
/// let pool = MaxPool::<_, Rank2<2, 3>>::new(Pool2dAxes::<3, 2, 2, 1, 0, 0>.ceil_mode());
/// let x: Tensor<f32, Rank4<1, 1, 5, 4>, Cpu> = Tensor::arange();
/// assert_eq!(pool.forward(x).to_vec(), [9., 10., 11., 17., 18., 19.]);
/// // 1-D windows of 2 on (N, C, L).
/// let y: Tensor<f32, Rank3<1, 1, 2>, Cpu> =
///     MaxPool::new(Pool1d::<2, 2, 0>).forward(Tensor::from_array([[[1., 3., 2., 0.]]]));
/// assert_eq!(y.to_vec(), [3., 2.]);
/// ```
#[derive(Clone, Copy, Debug, Default, Parameters)]
pub struct MaxPool<G, O> {
    /// The window.
    #[parameters(skip)]
    pub window: G,
    #[parameters(skip)]
    out: core::marker::PhantomData<O>,
}

/// Average pooling with any window ([`MaxPool`]'s, refined by `.ceil_mode()` and `.exclude_padding()`, PyTorch's
/// `count_include_pad=False`): PyTorch's `AvgPool1d/2d/3d`. `O` names the output's spatial sizes as for
/// [`MaxPool`]; [`AvgPool2d`] is the square 2-D form.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{AvgPool, Module};
/// use typed_tensor::tensor::{Pool3d, PoolGeometry};
/// // 2x2x2 windows with padding 1, the zeros left out of each average: a corner window averages its one voxel.
/// let pool = AvgPool::<_, Rank3<2, 2, 2>>::new(Pool3d::<2, 2, 1>.exclude_padding());
/// let x: Tensor<f32, Rank5<1, 1, 2, 2, 2>, Cpu> = Tensor::arange();
/// assert_eq!(pool.forward(x).to_vec(), [0., 1., 2., 3., 4., 5., 6., 7.]);
/// ```
#[derive(Clone, Copy, Debug, Default, Parameters)]
pub struct AvgPool<G, O> {
    /// The window.
    #[parameters(skip)]
    pub window: G,
    #[parameters(skip)]
    out: core::marker::PhantomData<O>,
}

/// The output shapes a pooling window gives: `Rank1<OL>` for a 1-D window, `Rank2<OH, OW>` for a 2-D one,
/// `Rank3<OD, OH, OW>` for a 3-D one (the bound of [`MaxPool::new`] and [`AvgPool::new`], so that a layer whose
/// output has another rank than its window is refused where it is built).
pub trait PoolOutput<G> {}

impl<G: PoolGeometry<1>, const OL: usize> PoolOutput<G> for Rank1<OL> {}
impl<G: PoolGeometry<2>, const OH: usize, const OW: usize> PoolOutput<G> for Rank2<OH, OW> {}
impl<G: PoolGeometry<3>, const OD: usize, const OH: usize, const OW: usize> PoolOutput<G>
    for Rank3<OD, OH, OW>
{
}

impl<G, O: PoolOutput<G>> MaxPool<G, O> {
    /// The layer pooling over `window`.
    pub const fn new(window: G) -> Self {
        MaxPool {
            window,
            out: core::marker::PhantomData,
        }
    }
}

impl<G, O: PoolOutput<G>> AvgPool<G, O> {
    /// The layer averaging over `window`.
    pub const fn new(window: G) -> Self {
        AvgPool {
            window,
            out: core::marker::PhantomData,
        }
    }
}

window_pool_layer!(MaxPool, PoolGeometry, max_pool1d, max_pool2d, max_pool3d);
window_pool_layer!(AvgPool, AvgPoolGeometry, avg_pool1d, avg_pool2d, avg_pool3d);

macro_rules! adaptive_pool_layer {
    ($(#[$m:meta])* $name:ident => $method:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, Parameters)]
        pub struct $name<const OH: usize, const OW: usize>;

        #[layer]
        impl<
                const OH: usize,
                const OW: usize,
                T: FloatDType,
                const N: usize,
                const C: usize,
                const H: usize,
                const W: usize,
                D: Device,
            > Module<Value<T, Rank4<N, C, H, W>, D>> for $name<OH, OW>
        {
            type Output = Value<T, Rank4<N, C, OH, OW>, D>;
            fn forward(&self, x: Value<T, Rank4<N, C, H, W>, D>) -> Self::Output {
                x.$method()
            }
        }

    };
}

adaptive_pool_layer!(
    /// Adaptive average pooling to `OH x OW` whatever the input's size (PyTorch's `AdaptiveAvgPool2d((OH, OW))`;
    /// `AdaptiveAvgPool2d<1, 1>` is global average pooling). See [`Tensor::adaptive_avg_pool2d`](crate::Tensor::adaptive_avg_pool2d).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{AdaptiveAvgPool2d, Module};
    /// let x = Tensor::<f32, Rank4<2, 3, 5, 7>, Cpu>::ones();
    /// let y: Tensor<f32, Rank4<2, 3, 1, 1>, Cpu> = AdaptiveAvgPool2d::<1, 1>.forward(x);
    /// assert!(y.to_vec().iter().all(|&v| (v - 1.0).abs() < 1e-6));
    /// ```
    AdaptiveAvgPool2d => adaptive_avg_pool2d
);
adaptive_pool_layer!(
    /// Adaptive max pooling to `OH x OW` whatever the input's size (PyTorch's `AdaptiveMaxPool2d((OH, OW))`;
    /// `AdaptiveMaxPool2d<1, 1>` is global max pooling). See [`Tensor::adaptive_max_pool2d`](crate::Tensor::adaptive_max_pool2d).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{AdaptiveMaxPool2d, Module};
    /// let x: Tensor<f32, Rank4<1, 1, 3, 3>, Cpu> = Tensor::arange();
    /// let y: Tensor<f32, Rank4<1, 1, 2, 2>, Cpu> = AdaptiveMaxPool2d::<2, 2>.forward(x);
    /// assert_eq!(y.to_vec(), [4., 5., 7., 8.]); // overlapping 2x2 bins
    /// ```
    AdaptiveMaxPool2d => adaptive_max_pool2d
);

/// Resizes images to `OH x OW` (PyTorch's `Upsample(size=(OH, OW), mode=.., align_corners=..)`, which also
/// shrinks); see [`Tensor::interpolate`](crate::Tensor::interpolate). The default mode is nearest, as in PyTorch.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Module, Upsample};
/// use typed_tensor::ops::Interpolation;
/// let up = Upsample::<4, 4>::new(Interpolation::Bilinear { align_corners: false });
/// let y: Tensor<f32, Rank4<1, 3, 4, 4>, Cpu> = up.forward(Tensor::<f32, Rank4<1, 3, 2, 2>, Cpu>::ones());
/// assert!(y.to_vec().iter().all(|&v| (v - 1.0).abs() < 1e-6));
/// ```
#[derive(Clone, Copy, Debug, Parameters)]
pub struct Upsample<const OH: usize, const OW: usize> {
    /// How output pixels are computed.
    #[parameters(skip)]
    pub mode: Interpolation,
}

impl<const OH: usize, const OW: usize> Upsample<OH, OW> {
    /// A resize to `OH x OW` by `mode`.
    pub fn new(mode: Interpolation) -> Self {
        Upsample { mode }
    }
}

impl<const OH: usize, const OW: usize> Default for Upsample<OH, OW> {
    fn default() -> Self {
        Upsample::new(Interpolation::Nearest)
    }
}

#[layer]
impl<
        const OH: usize,
        const OW: usize,
        T: FloatDType,
        const N: usize,
        const C: usize,
        const H: usize,
        const W: usize,
        D: Device,
    > Module<Value<T, Rank4<N, C, H, W>, D>> for Upsample<OH, OW>
{
    type Output = Value<T, Rank4<N, C, OH, OW>, D>;
    fn forward(&self, x: Value<T, Rank4<N, C, H, W>, D>) -> Self::Output {
        x.interpolate(self.mode)
    }
}

/// `(N, C, H, W) -> (N, OUT)` with `OUT = C * H * W` (a `const` assertion).
#[derive(Clone, Copy, Debug, Default, Parameters)]
pub struct Flatten<const OUT: usize>;

#[layer]
impl<
        const OUT: usize,
        T: FloatDType,
        const N: usize,
        const C: usize,
        const H: usize,
        const W: usize,
        D: Device,
    > Module<Value<T, Rank4<N, C, H, W>, D>> for Flatten<OUT>
{
    type Output = Value<T, (Const<N>, Const<OUT>), D>;
    fn forward(&self, x: Value<T, Rank4<N, C, H, W>, D>) -> Self::Output {
        const {
            size_check::output_is(
                "Flatten",
                "width C·H·W",
                &[n(C), t("·"), n(H), t("·"), n(W)],
                C * H * W,
                OUT,
            )
        };
        x.reshape_with_shape(Default::default()) // checked above, so a mistake is one error
    }
}
