//! The encoder layer and its stack.

use super::{residual, seeds, FeedForward, TransformerConfig};
use crate::dtype::FloatDType;
use crate::nn::multihead::{KeysOf, MhaMasks, MultiheadAttention};
use crate::nn::{layer, BiasKind, Dropout, LayerNorm, Module, Parameters, WithBias};
use crate::ops::Device;
use crate::shape::{Const, Dim};

/// One transformer encoder layer (PyTorch's `nn.TransformerEncoderLayer(E, HEADS, FF, .., batch_first=True)`):
/// self-attention over `HEADS` heads of `HEAD_DIM` (`E = HEADS · HEAD_DIM`, checked at build time) and a
/// feed-forward block `E -> FF -> E`, each with a residual connection and a layer norm, in PyTorch's order for
/// [`TransformerConfig::norm_first`]. Inputs `(B, L, E)`. Parameters under PyTorch's names:
/// `self_attn.in_proj_weight`, `self_attn.in_proj_bias`, `self_attn.out_proj.*`, `linear1.*`, `linear2.*`,
/// `norm1.*`, `norm2.*`; [`NoBias`](crate::nn::NoBias) is PyTorch's `bias=False` (no bias in the projections, the
/// linears or the norms).
///
/// `forward(x)` runs unmasked; [`Self::forward_masked`] takes PyTorch's `src_mask`, `src_key_padding_mask` and
/// `is_causal` as [`MhaMasks`].
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Module, TransformerConfig, TransformerEncoderLayer};
/// // d_model 16 in 4 heads of 4, feed-forward width 32.
/// let layer = TransformerEncoderLayer::<f32, 16, 4, 4, 32, Cpu>::new(0, TransformerConfig::default());
/// let x = Tensor::<f32, Rank3<2, 5, 16>, Cpu>::randn(1);
/// let y: Tensor<f32, Rank3<2, 5, 16>, Cpu> = layer.forward(x);
/// ```
#[derive(Parameters)]
pub struct TransformerEncoderLayer<
    T: FloatDType,
    const E: usize,
    const HEADS: usize,
    const HEAD_DIM: usize,
    const FF: usize,
    D: Device,
    B: BiasKind = WithBias,
> {
    /// The self-attention block.
    pub self_attn: MultiheadAttention<T, E, HEADS, HEAD_DIM, D, B>,
    /// The feed-forward block (`linear1.*`, `linear2.*`).
    #[parameters(flatten)]
    pub feed_forward: FeedForward<T, E, FF, D, B>,
    /// The norm of the attention block.
    pub norm1: LayerNorm<T, E, D, B>,
    /// The norm of the feed-forward block.
    pub norm2: LayerNorm<T, E, D, B>,
    /// Dropout of the attention block's output.
    pub dropout1: Dropout,
    /// Dropout of the feed-forward block's output.
    pub dropout2: Dropout,
    #[parameters(skip)]
    config: TransformerConfig,
}

impl<
        T: FloatDType,
        const E: usize,
        const HEADS: usize,
        const HEAD_DIM: usize,
        const FF: usize,
        D: Device,
        B: BiasKind,
    > TransformerEncoderLayer<T, E, HEADS, HEAD_DIM, FF, D, B>
{
    /// A layer with PyTorch's initialisation from `seed` (each linear's default, the attention's Xavier
    /// in-projection, norms at 1 and 0) and the dropout streams seeded from it.
    pub fn new(seed: u64, config: TransformerConfig) -> Self {
        let seeds = seeds(seed);
        TransformerEncoderLayer {
            self_attn: MultiheadAttention::new(seeds(1)).with_dropout(config.dropout, seeds(2)),
            feed_forward: FeedForward::new([seeds(3), seeds(5), seeds(4)], &config),
            norm1: LayerNorm::new(config.layer_norm_eps),
            norm2: LayerNorm::new(config.layer_norm_eps),
            dropout1: Dropout::new(config.dropout, seeds(6)),
            dropout2: Dropout::new(config.dropout, seeds(7)),
            config,
        }
    }

    /// The layer's options.
    pub fn config(&self) -> TransformerConfig {
        self.config
    }

    /// The layer over `x` `(B, L, E)` with `masks` (PyTorch's `forward(src, src_mask, src_key_padding_mask,
    /// is_causal)`; weights are never returned here). Plain tensors and traced values alike.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{MhaMasks, TransformerConfig, TransformerEncoderLayer};
    /// let layer = TransformerEncoderLayer::<f32, 8, 2, 4, 16, Cpu>::new(0, TransformerConfig::default());
    /// let x = Tensor::<f32, Rank3<1, 3, 8>, Cpu>::randn(1);
    /// let causal = layer.forward_masked(x.clone(), MhaMasks::new().causal());
    /// // The first position sees only itself, as does a sequence of that position alone.
    /// let alone = layer.forward_masked(x.narrow::<Axis<1>, 0, 1>().contiguous(), MhaMasks::new());
    /// let (a, b) = (causal.i((0, 0)).to_vec(), alone.i((0, 0)).to_vec());
    /// assert!(a.iter().zip(&b).all(|(a, b)| (a - b).abs() < 1e-5));
    /// ```
    pub fn forward_masked<'m, X: KeysOf>(&self, x: X, masks: MhaMasks<'m, T, X, D>) -> X
    where
        Self: Module<(X, MhaMasks<'m, T, X, D>), Output = X>,
    {
        self.forward((x, masks))
    }

    /// [`Self::forward_masked`], returning `Error::AxisSize` (naming the mask, the axis and both sizes) when a
    /// mask's runtime-sized dims differ from the batch's or the sequence's, rather than panicking.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{MhaMasks, TransformerConfig, TransformerEncoderLayer};
    /// let layer = TransformerEncoderLayer::<f32, 8, 2, 4, 16, Cpu>::new(0, TransformerConfig::default());
    /// let x = Tensor::<f32, (usize, Const<3>, Const<8>), Cpu>::zeros_with_shape((2, Const, Const));
    /// let padding = Tensor::<u8, (usize, Const<3>), Cpu>::zeros_with_shape((1, Const)); // one sample's, not two
    /// let err = layer.try_forward_masked(x, MhaMasks::new().key_padding_mask(&padding)).unwrap_err();
    /// assert_eq!(err.to_string(), "MultiheadAttention key_padding_mask: axis 0 has size 1, expected 2");
    /// ```
    pub fn try_forward_masked<'m, X: KeysOf>(
        &self,
        x: X,
        masks: MhaMasks<'m, T, X, D>,
    ) -> crate::Result<X>
    where
        Self: Module<(X, MhaMasks<'m, T, X, D>), Output = X>,
    {
        masks.check_for("TransformerEncoderLayer", HEADS, &x, &x)?;
        Ok(self.forward((x, masks)))
    }
}

#[layer]
impl<
        'm,
        T: FloatDType,
        const E: usize,
        const HEADS: usize,
        const HEAD_DIM: usize,
        const FF: usize,
        D: Device,
        K: BiasKind,
        B: Dim,
        L: Dim,
    >
    Module<(
        Value<T, (B, L, Const<E>), D>,
        MhaMasks<'m, T, Value<T, (B, L, Const<E>), D>, D>,
    )> for TransformerEncoderLayer<T, E, HEADS, HEAD_DIM, FF, D, K>
{
    type Output = Value<T, (B, L, Const<E>), D>;
    fn forward(
        &self,
        (x, masks): (
            Value<T, (B, L, Const<E>), D>,
            MhaMasks<'m, T, Value<T, (B, L, Const<E>), D>, D>,
        ),
    ) -> Self::Output {
        let first = self.config.norm_first;
        let x = residual(x, &self.norm1, first, |x| {
            let attended = self.self_attn.attend(x.clone(), x.clone(), x, masks).0;
            self.dropout1.forward(attended)
        });
        residual(x, &self.norm2, first, |x| {
            self.dropout2.forward(self.feed_forward.forward(x))
        })
    }
}

#[layer]
impl<
        T: FloatDType,
        const E: usize,
        const HEADS: usize,
        const HEAD_DIM: usize,
        const FF: usize,
        D: Device,
        K: BiasKind,
        B: Dim,
        L: Dim,
    > Module<Value<T, (B, L, Const<E>), D>>
    for TransformerEncoderLayer<T, E, HEADS, HEAD_DIM, FF, D, K>
{
    type Output = Value<T, (B, L, Const<E>), D>;
    fn forward(&self, x: Value<T, (B, L, Const<E>), D>) -> Self::Output {
        self.forward_masked(x, MhaMasks::new())
    }
}

/// `N` encoder layers in a row, and optionally a final norm (PyTorch's `nn.TransformerEncoder(layer, N, norm)`;
/// the layers named `layers.0.…` to `layers.{N-1}.…`, the norm `norm.*`). The layer count is in the type.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Module, TransformerConfig, TransformerEncoder, TransformerEncoderLayer};
/// type Layer = TransformerEncoderLayer<f32, 8, 2, 4, 16, Cpu>;
/// let encoder: TransformerEncoder<Layer, 2> =
///     TransformerEncoder::new(|i| Layer::new(i as u64, TransformerConfig::default()));
/// let y = encoder.forward(Tensor::<f32, Rank3<1, 3, 8>, Cpu>::randn(0));
/// # assert_eq!(y.dims().to_vec(), [1, 3, 8]);
/// ```
#[derive(Parameters)]
pub struct TransformerEncoder<Layer, const N: usize, Norm = ()> {
    /// The layers, applied in order.
    pub layers: [Layer; N],
    /// The final norm, or `()` for none (PyTorch's `norm=None`).
    pub norm: Norm,
}

impl<Layer, const N: usize> TransformerEncoder<Layer, N> {
    /// `N` layers from `layer(i)`, no final norm.
    pub fn new(layer: impl FnMut(usize) -> Layer) -> Self {
        TransformerEncoder {
            layers: core::array::from_fn(layer),
            norm: (),
        }
    }
}

impl<Layer, const N: usize, Norm> TransformerEncoder<Layer, N, Norm> {
    /// These layers followed by `norm` (PyTorch's `norm=LayerNorm(E)`, usual with `norm_first` layers).
    pub fn with_norm<Norm2>(self, norm: Norm2) -> TransformerEncoder<Layer, N, Norm2> {
        TransformerEncoder {
            layers: self.layers,
            norm,
        }
    }

    /// The encoder over `x` with `masks` for every layer (PyTorch's `forward(src, mask, src_key_padding_mask,
    /// is_causal)`).
    pub fn forward_masked<'m, T: FloatDType, D: Device, X: KeysOf>(
        &self,
        x: X,
        masks: MhaMasks<'m, T, X, D>,
    ) -> X
    where
        Layer: Module<(X, MhaMasks<'m, T, X, D>), Output = X>,
        Norm: Module<X, Output = X>,
    {
        let x = self
            .layers
            .iter()
            .fold(x, |x, layer| layer.forward((x, masks)));
        self.norm.forward(x)
    }

    /// [`Self::forward_masked`], returning `Error::AxisSize` when a mask's runtime-sized dims differ from the
    /// batch's or the sequence's, rather than panicking (see
    /// [`TransformerEncoderLayer::try_forward_masked`]).
    pub fn try_forward_masked<'m, T: FloatDType, D: Device, X: KeysOf>(
        &self,
        x: X,
        masks: MhaMasks<'m, T, X, D>,
    ) -> crate::Result<X>
    where
        Layer: Module<(X, MhaMasks<'m, T, X, D>), Output = X> + super::AttentionHeads,
        Norm: Module<X, Output = X>,
    {
        masks.check_for("TransformerEncoder", Layer::HEADS, &x, &x)?;
        Ok(self.forward_masked(x, masks))
    }
}

impl<X, Layer: Module<X, Output = X>, const N: usize, Norm: Module<X, Output = X>> Module<X>
    for TransformerEncoder<Layer, N, Norm>
{
    type Output = X;
    fn forward(&self, x: X) -> X {
        let x = self.layers.iter().fold(x, |x, layer| layer.forward(x));
        self.norm.forward(x)
    }
}
