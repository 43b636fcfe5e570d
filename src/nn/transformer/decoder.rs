//! The decoder layer and its stack.

use super::{residual, seeds, FeedForward, TransformerConfig};
use crate::dtype::FloatDType;
use crate::nn::multihead::{KeysOf, MhaMasks, MultiheadAttention};
use crate::nn::{layer, BiasKind, Dropout, LayerNorm, Module, Parameters, WithBias};
use crate::ops::Device;
use crate::shape::{Const, Dim};

/// One transformer decoder layer (PyTorch's `nn.TransformerDecoderLayer(E, HEADS, FF, .., batch_first=True)`):
/// self-attention over the target `(B, L, E)`, attention of the target over the encoder's output (`memory`,
/// `(B, S, E)`), and the feed-forward block, each with a residual connection and a layer norm in PyTorch's order
/// for [`TransformerConfig::norm_first`]. Parameters under PyTorch's names: `self_attn.*`, `multihead_attn.*`,
/// `linear1.*`, `linear2.*`, `norm1.*`, `norm2.*`, `norm3.*`.
///
/// `forward((tgt, memory))` runs unmasked; [`Self::forward_masked`] takes PyTorch's `tgt_mask`,
/// `tgt_key_padding_mask` and `tgt_is_causal` as the target's [`MhaMasks`] and `memory_mask`,
/// `memory_key_padding_mask` as the memory's.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{MhaMasks, Module, TransformerConfig, TransformerDecoderLayer};
/// let layer = TransformerDecoderLayer::<f32, 8, 2, 4, 16, Cpu>::new(0, TransformerConfig::default());
/// let tgt = Tensor::<f32, Rank3<2, 3, 8>, Cpu>::randn(1);
/// let memory = Tensor::<f32, Rank3<2, 5, 8>, Cpu>::randn(2);
/// let y: Tensor<f32, Rank3<2, 3, 8>, Cpu> = layer.forward((tgt.clone(), memory.clone()));
/// let causal = layer.forward_masked(tgt, memory, MhaMasks::new().causal(), MhaMasks::new());
/// # assert_eq!(causal.dims().to_vec(), [2, 3, 8]);
/// ```
#[derive(Parameters)]
pub struct TransformerDecoderLayer<
    T: FloatDType,
    const E: usize,
    const HEADS: usize,
    const HEAD_DIM: usize,
    const FF: usize,
    D: Device,
    B: BiasKind = WithBias,
> {
    /// The target's self-attention.
    pub self_attn: MultiheadAttention<T, E, HEADS, HEAD_DIM, D, B>,
    /// The target's attention over the memory.
    pub multihead_attn: MultiheadAttention<T, E, HEADS, HEAD_DIM, D, B>,
    /// The feed-forward block (`linear1.*`, `linear2.*`).
    #[parameters(flatten)]
    pub feed_forward: FeedForward<T, E, FF, D, B>,
    /// The norm of the self-attention block.
    pub norm1: LayerNorm<T, E, D, B>,
    /// The norm of the attention over the memory.
    pub norm2: LayerNorm<T, E, D, B>,
    /// The norm of the feed-forward block.
    pub norm3: LayerNorm<T, E, D, B>,
    /// Dropout of the self-attention block's output.
    pub dropout1: Dropout,
    /// Dropout of the memory attention's output.
    pub dropout2: Dropout,
    /// Dropout of the feed-forward block's output.
    pub dropout3: Dropout,
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
    > TransformerDecoderLayer<T, E, HEADS, HEAD_DIM, FF, D, B>
{
    /// A layer with PyTorch's initialisation from `seed` and the dropout streams seeded from it.
    pub fn new(seed: u64, config: TransformerConfig) -> Self {
        let seeds = seeds(seed);
        TransformerDecoderLayer {
            self_attn: MultiheadAttention::new(seeds(1)).with_dropout(config.dropout, seeds(2)),
            multihead_attn: MultiheadAttention::new(seeds(3))
                .with_dropout(config.dropout, seeds(4)),
            feed_forward: FeedForward::new([seeds(5), seeds(6), seeds(7)], &config),
            norm1: LayerNorm::new(config.layer_norm_eps),
            norm2: LayerNorm::new(config.layer_norm_eps),
            norm3: LayerNorm::new(config.layer_norm_eps),
            dropout1: Dropout::new(config.dropout, seeds(8)),
            dropout2: Dropout::new(config.dropout, seeds(9)),
            dropout3: Dropout::new(config.dropout, seeds(10)),
            config,
        }
    }

    /// The layer's options.
    pub fn config(&self) -> TransformerConfig {
        self.config
    }

    /// The layer over the target `tgt` `(B, L, E)` and the encoder's `memory` `(B, S, E)` with the target's
    /// masks (self-attention) and the memory's (PyTorch's `forward(tgt, memory, tgt_mask, memory_mask,
    /// tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal)`). Plain tensors and traced values alike.
    pub fn forward_masked<'m, X: KeysOf, M: KeysOf>(
        &self,
        tgt: X,
        memory: M,
        tgt_masks: MhaMasks<'m, T, X, D>,
        memory_masks: MhaMasks<'m, T, M, D>,
    ) -> X
    where
        Self: Module<(X, M, MhaMasks<'m, T, X, D>, MhaMasks<'m, T, M, D>), Output = X>,
    {
        self.forward((tgt, memory, tgt_masks, memory_masks))
    }

    /// [`Self::forward_masked`], returning `Error::AxisSize` when a mask's runtime-sized dims differ from the
    /// batch's, the target's or the memory's length, or the memory's batch from the target's, rather than
    /// panicking.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{MhaMasks, TransformerConfig, TransformerDecoderLayer};
    /// let layer = TransformerDecoderLayer::<f32, 8, 2, 4, 16, Cpu>::new(0, TransformerConfig::default());
    /// let tgt = Tensor::<f32, (usize, Const<3>, Const<8>), Cpu>::zeros_with_shape((2, Const, Const));
    /// let memory = Tensor::<f32, (usize, Const<5>, Const<8>), Cpu>::zeros_with_shape((3, Const, Const));
    /// let err = layer.try_forward_masked(tgt, memory, MhaMasks::new(), MhaMasks::new()).unwrap_err();
    /// assert_eq!(err.to_string(), "TransformerDecoderLayer memory: axis 0 has size 3, expected 2");
    /// ```
    pub fn try_forward_masked<'m, X: KeysOf, M: KeysOf>(
        &self,
        tgt: X,
        memory: M,
        tgt_masks: MhaMasks<'m, T, X, D>,
        memory_masks: MhaMasks<'m, T, M, D>,
    ) -> crate::Result<X>
    where
        Self: Module<(X, M, MhaMasks<'m, T, X, D>, MhaMasks<'m, T, M, D>), Output = X>,
    {
        tgt_masks.check_for("TransformerDecoderLayer", HEADS, &tgt, &tgt)?;
        memory_masks.check_for("TransformerDecoderLayer memory", HEADS, &tgt, &memory)?;
        Ok(self.forward((tgt, memory, tgt_masks, memory_masks)))
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
        S: Dim,
    >
    Module<(
        Value<T, (B, L, Const<E>), D>,
        Value<T, (B, S, Const<E>), D>,
        MhaMasks<'m, T, Value<T, (B, L, Const<E>), D>, D>,
        MhaMasks<'m, T, Value<T, (B, S, Const<E>), D>, D>,
    )> for TransformerDecoderLayer<T, E, HEADS, HEAD_DIM, FF, D, K>
{
    type Output = Value<T, (B, L, Const<E>), D>;
    #[allow(clippy::type_complexity)]
    fn forward(
        &self,
        (tgt, memory, tgt_masks, memory_masks): (
            Value<T, (B, L, Const<E>), D>,
            Value<T, (B, S, Const<E>), D>,
            MhaMasks<'m, T, Value<T, (B, L, Const<E>), D>, D>,
            MhaMasks<'m, T, Value<T, (B, S, Const<E>), D>, D>,
        ),
    ) -> Self::Output {
        let first = self.config.norm_first;
        let x = residual(tgt, &self.norm1, first, |x| {
            let attended = self.self_attn.attend(x.clone(), x.clone(), x, tgt_masks).0;
            self.dropout1.forward(attended)
        });
        let x = residual(x, &self.norm2, first, |x| {
            let (k, v) = (memory.clone(), memory);
            let attended = self.multihead_attn.attend(x, k, v, memory_masks).0;
            self.dropout2.forward(attended)
        });
        residual(x, &self.norm3, first, |x| {
            self.dropout3.forward(self.feed_forward.forward(x))
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
        S: Dim,
    > Module<(Value<T, (B, L, Const<E>), D>, Value<T, (B, S, Const<E>), D>)>
    for TransformerDecoderLayer<T, E, HEADS, HEAD_DIM, FF, D, K>
{
    type Output = Value<T, (B, L, Const<E>), D>;
    fn forward(
        &self,
        (tgt, memory): (Value<T, (B, L, Const<E>), D>, Value<T, (B, S, Const<E>), D>),
    ) -> Self::Output {
        self.forward_masked(tgt, memory, MhaMasks::new(), MhaMasks::new())
    }
}

/// `N` decoder layers in a row over one memory, and optionally a final norm (PyTorch's
/// `nn.TransformerDecoder(layer, N, norm)`; `layers.0.…` to `layers.{N-1}.…`, `norm.*`).
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Module, TransformerConfig, TransformerDecoder, TransformerDecoderLayer};
/// type Layer = TransformerDecoderLayer<f32, 8, 2, 4, 16, Cpu>;
/// let decoder: TransformerDecoder<Layer, 2> =
///     TransformerDecoder::new(|i| Layer::new(i as u64, TransformerConfig::default()));
/// let tgt = Tensor::<f32, Rank3<1, 3, 8>, Cpu>::randn(0);
/// let y = decoder.forward((tgt, Tensor::<f32, Rank3<1, 4, 8>, Cpu>::randn(1)));
/// # assert_eq!(y.dims().to_vec(), [1, 3, 8]);
/// ```
#[derive(Parameters)]
pub struct TransformerDecoder<Layer, const N: usize, Norm = ()> {
    /// The layers, applied in order.
    pub layers: [Layer; N],
    /// The final norm, or `()` for none.
    pub norm: Norm,
}

impl<Layer, const N: usize> TransformerDecoder<Layer, N> {
    /// `N` layers from `layer(i)`, no final norm.
    pub fn new(layer: impl FnMut(usize) -> Layer) -> Self {
        TransformerDecoder {
            layers: core::array::from_fn(layer),
            norm: (),
        }
    }
}

impl<Layer, const N: usize, Norm> TransformerDecoder<Layer, N, Norm> {
    /// These layers followed by `norm`.
    pub fn with_norm<Norm2>(self, norm: Norm2) -> TransformerDecoder<Layer, N, Norm2> {
        TransformerDecoder {
            layers: self.layers,
            norm,
        }
    }

    /// The decoder over `tgt` and `memory` with the same masks for every layer (PyTorch's `forward(tgt, memory,
    /// tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal)`).
    pub fn forward_masked<'m, T: FloatDType, D: Device, X: KeysOf, M: KeysOf + Clone>(
        &self,
        tgt: X,
        memory: M,
        tgt_masks: MhaMasks<'m, T, X, D>,
        memory_masks: MhaMasks<'m, T, M, D>,
    ) -> X
    where
        Layer: Module<(X, M, MhaMasks<'m, T, X, D>, MhaMasks<'m, T, M, D>), Output = X>,
        Norm: Module<X, Output = X>,
    {
        let x = self.layers.iter().fold(tgt, |x, layer| {
            layer.forward((x, memory.clone(), tgt_masks, memory_masks))
        });
        self.norm.forward(x)
    }

    /// [`Self::forward_masked`], returning `Error::AxisSize` when a mask's runtime-sized dims differ from the
    /// batch's, the target's or the memory's length, or the memory's batch from the target's, rather than
    /// panicking (see [`TransformerDecoderLayer::try_forward_masked`]).
    pub fn try_forward_masked<'m, T: FloatDType, D: Device, X: KeysOf, M: KeysOf + Clone>(
        &self,
        tgt: X,
        memory: M,
        tgt_masks: MhaMasks<'m, T, X, D>,
        memory_masks: MhaMasks<'m, T, M, D>,
    ) -> crate::Result<X>
    where
        Layer: Module<(X, M, MhaMasks<'m, T, X, D>, MhaMasks<'m, T, M, D>), Output = X>
            + super::AttentionHeads,
        Norm: Module<X, Output = X>,
    {
        tgt_masks.check_for("TransformerDecoder", Layer::HEADS, &tgt, &tgt)?;
        memory_masks.check_for("TransformerDecoder memory", Layer::HEADS, &tgt, &memory)?;
        Ok(self.forward_masked(tgt, memory, tgt_masks, memory_masks))
    }
}

impl<
        X,
        M: Clone,
        Layer: Module<(X, M), Output = X>,
        const N: usize,
        Norm: Module<X, Output = X>,
    > Module<(X, M)> for TransformerDecoder<Layer, N, Norm>
{
    type Output = X;
    fn forward(&self, (tgt, memory): (X, M)) -> X {
        let x = self
            .layers
            .iter()
            .fold(tgt, |x, layer| layer.forward((x, memory.clone())));
        self.norm.forward(x)
    }
}
