//! `unfold` and `fold` (PyTorch's `F.unfold`/`F.fold`, im2col and col2im as public ops): the sliding
//! `KH x KW` patches of each channel as columns, and their sum back into an image. The columns keep their
//! spatial layout, `(N, C KH KW, OH, OW)`; `.reshape()` gives PyTorch's `(N, C KH KW, L)`.
//!
//! Both are kernels of their own ([`ConvKernels::unfold`](super::ConvKernels::unfold) and
//! [`ConvKernels::fold`](super::ConvKernels::fold)): unfold a read per column value (zero in the padding), fold
//! each column value added into the one pixel it came from, so a NaN or an infinity in the columns reaches that
//! pixel alone, as in PyTorch's `col2im` (the one-hot depthwise convolutions these replace multiplied it by the
//! other taps' zeros). Each is the other's gradient.

use super::geometry::ConvGeometry;
use crate::dtype::FloatDType;
use crate::ops::Conv2dParams;
use crate::ops::Device;
use crate::shape::size_check::{self, n, static_dims, t};
use crate::shape::{Rank4, Shape};
use crate::tensor::{call, written, Tensor};

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The unfold kernel on this `(N, C, H, W)` tensor into columns of `shape` (`kernel` windows placed by `p`):
    /// the typed methods' body and fold's gradient, compiled per element type and device only where `SO` is a
    /// runtime shape.
    pub(crate) fn unfold_into<SO: Shape>(
        &self,
        shape: SO,
        kernel: [usize; 2],
        p: Conv2dParams,
    ) -> Tensor<T, SO, D> {
        let src = (self.buffer(), &self.layout());
        written!(
            Tensor::written_by,
            shape,
            "unfold",
            call::unfold::<T, D>(src, kernel, p)
        )
    }

    /// The fold kernel on these `(N, C KH KW, OH, OW)` columns into an image of `shape` (`(N, C, H, W)`).
    pub(crate) fn fold_into<SO: Shape>(
        &self,
        shape: SO,
        kernel: [usize; 2],
        p: Conv2dParams,
    ) -> Tensor<T, SO, D> {
        let d = shape.dims();
        let image = [d[2], d[3]];
        let src = (self.buffer(), &self.layout());
        written!(
            Tensor::written_by,
            shape,
            "fold",
            call::fold::<T, D>(src, kernel, image, p)
        )
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
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::conv_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x: Tensor<f32, Rank4<1, 2, 3, 3>, Cpu> = Tensor::arange();
    /// // 2 channels of 2x2 patches are 2·2·2 = 8 columns, not 4.
    /// let cols: Tensor<f32, Rank4<1, 4, 2, 2>, Cpu> = x.unfold::<2, 2, _, _, _, _>(Conv::<1, 0, 1, 1>);
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
        #[rustfmt::skip]
        let () = UnfoldFits::<G, Rank4<N, C, H, W>, Rank4<N, CK, OH, OW>, KH, KW, false>::OK;
        self.unfold_into(Default::default(), [KH, KW], G::PARAMS)
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
        #[rustfmt::skip]
        let () = UnfoldFits::<G, Rank4<N, C, H, W>, Rank4<N, CK, OH, OW>, KH, KW, true>::OK;
        self.fold_into(Default::default(), [KH, KW], G::PARAMS)
    }
}

/// The build-time rules of unfold between an image of shape `Img` `(N, C, H, W)` and columns of shape `Cols`
/// `(N, CK, OH, OW)` for `KH x KW` windows placed by `G`: groups 1, `CK = C KH KW`, `(OH, OW)` the window
/// arithmetic's, and for `fold` (`FOLD`) the image exactly what the windows cover (no rows or columns left over
/// by the stride). An associated `const` named by the tensor methods and their traced twins alike, so a mistake
/// is one error at the user's call; its uses are one line each (`#[rustfmt::skip]`).
pub(super) struct UnfoldFits<G, Img, Cols, const KH: usize, const KW: usize, const FOLD: bool>(
    core::marker::PhantomData<(G, Img, Cols)>,
);

impl<
        G: ConvGeometry,
        Img: Shape,
        Cols: Shape,
        const KH: usize,
        const KW: usize,
        const FOLD: bool,
    > UnfoldFits<G, Img, Cols, KH, KW, FOLD>
{
    pub(super) const OK: () = {
        let p = G::PARAMS;
        let ([_, c, h, w, ..], [_, ck, oh, ow, ..]) = (static_dims::<Img>(), static_dims::<Cols>());
        if p.groups != 1 {
            size_check::fail(
                "unfold/fold",
                &[t("the geometry's groups must be 1, not "), n(p.groups)],
            );
        }
        let rule = [t("C·KH·KW = "), n(c), t("·"), n(KH), t("·"), n(KW)];
        let (what, expected) = ("the columns' channels", c * KH * KW);
        size_check::output_is("unfold/fold", what, &rule, expected, ck);
        size_check::window_out("unfold/fold", "grid height", p.window(0, h, KH), oh);
        size_check::window_out("unfold/fold", "grid width", p.window(1, w, KW), ow);
        if FOLD {
            // The image the windows cover is the transposed window over the grid.
            size_check::transposed_out("fold", "image height", p.window(0, oh, KH), 0, h);
            size_check::transposed_out("fold", "image width", p.window(1, ow, KW), 0, w);
        }
    };
}

#[cfg(feature = "std")]
mod traced {
    use super::super::grad::Dyn4;
    use super::*;
    use crate::autograd::{record_with, Gradients, Slot, Traced};
    use crate::tensor::Grad;

    /// What unfold's and fold's rules keep: the input's slot, the window and its placement, and the sizes of
    /// the side the gradient goes to (`(H, W)` of the image, `(OH, OW)` of the columns' grid).
    type Captured = (Slot, [usize; 2], Conv2dParams, [usize; 2]);

    /// unfold's gradient: the columns' gradient folded back into the image.
    fn unfold_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        (slot, kernel, p, [h, w]): Captured,
        store: &mut Gradients,
    ) {
        let d = g.dims();
        let cols = g.unpadded((d[2], d[3], d[4], d[5]));
        let shape: Dyn4 = (d[2], d[3] / (kernel[0] * kernel[1]).max(1), h, w);
        slot.give_padded(store, cols.fold_into(shape, kernel, p).padded());
    }

    /// fold's gradient: the image's gradient unfolded into columns.
    fn fold_rule<T: FloatDType, D: Device>(
        g: Grad<T, D>,
        (slot, kernel, p, [oh, ow]): Captured,
        store: &mut Gradients,
    ) {
        let d = g.dims();
        let image = g.unpadded((d[2], d[3], d[4], d[5]));
        let shape: Dyn4 = (d[2], d[3] * kernel[0] * kernel[1], oh, ow);
        slot.give_padded(store, image.unfold_into(shape, kernel, p).padded());
    }

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
            #[rustfmt::skip]
            let () = UnfoldFits::<G, Rank4<N, C, H, W>, Rank4<N, CK, OH, OW>, KH, KW, false>::OK;
            let value = self.value().unfold::<KH, KW, CK, OH, OW, G>(geometry);
            let captured = (self.slot(), [KH, KW], G::PARAMS, [H, W]);
            record_with(value, &[&self.node], captured, unfold_rule::<T, D>)
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
            #[rustfmt::skip]
            let () = UnfoldFits::<G, Rank4<N, C, H, W>, Rank4<N, CK, OH, OW>, KH, KW, true>::OK;
            let value = self.value().fold::<KH, KW, C, H, W, G>(geometry);
            let captured = (self.slot(), [KH, KW], G::PARAMS, [OH, OW]);
            record_with(value, &[&self.node], captured, fold_rule::<T, D>)
        }
    }
}
