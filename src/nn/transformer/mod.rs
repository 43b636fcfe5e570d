//! Transformer blocks, PyTorch's `nn.TransformerEncoderLayer`, `nn.TransformerDecoderLayer` and their stacks
//! with `batch_first=True`: its options, its parameter names, the post-norm and pre-norm (`norm_first`) orders.
//! encoder.rs and decoder.rs hold the layers and stacks; here are what they share: the options, the feed-forward
//! block, and the residual connection in either order.

mod decoder;
mod encoder;

pub use decoder::{TransformerDecoder, TransformerDecoderLayer};
pub use encoder::{TransformerEncoder, TransformerEncoderLayer};

use super::{layer, BiasKind, Dropout, Linear, Module, Parameters, WithBias};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{Const, Dim};
use core::ops::Add;

/// The feed-forward block's activation (PyTorch's `activation="relu"` or `"gelu"`, the exact erf form).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FeedForwardActivation {
    /// `max(x, 0)`, PyTorch's default.
    #[default]
    Relu,
    /// `x Φ(x)` with the erf (PyTorch's `F.gelu`, `approximate="none"`).
    Gelu,
}

/// How a transformer layer is built; the default is PyTorch's (`dropout` 0.1, ReLU, `layer_norm_eps` 1e-5,
/// `norm_first` false).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransformerConfig {
    /// Dropout after the attention block, inside and after the feed-forward block, and of the attention
    /// weights, while training.
    pub dropout: f64,
    /// The feed-forward block's activation.
    pub activation: FeedForwardActivation,
    /// The layer norms' `eps`.
    pub layer_norm_eps: f64,
    /// Normalise before each block (pre-norm, `x + block(norm(x))`) instead of after (`norm(x + block(x))`).
    pub norm_first: bool,
}

impl Default for TransformerConfig {
    fn default() -> Self {
        TransformerConfig {
            dropout: 0.1,
            activation: FeedForwardActivation::Relu,
            layer_norm_eps: 1e-5,
            norm_first: false,
        }
    }
}

/// The position-wise feed-forward block, `linear2(dropout(activation(linear1(x))))` (PyTorch's `_ff_block`
/// before its closing dropout), `E -> FF -> E`. A transformer layer holds it flat: its parameters are the layer's
/// `linear1.*` and `linear2.*`, as PyTorch names them.
#[derive(Parameters)]
pub struct FeedForward<
    T: FloatDType,
    const E: usize,
    const FF: usize,
    D: Device,
    B: BiasKind = WithBias,
> {
    /// `E -> FF`.
    pub linear1: Linear<T, E, FF, D, B>,
    /// Dropout after the activation.
    pub dropout: Dropout,
    /// `FF -> E`.
    pub linear2: Linear<T, FF, E, D, B>,
    #[parameters(skip)]
    activation: FeedForwardActivation,
}

impl<T: FloatDType, const E: usize, const FF: usize, D: Device, B: BiasKind>
    FeedForward<T, E, FF, D, B>
{
    /// PyTorch's initialisation of both linears from `seeds`, dropout `p` with masks from the third seed.
    fn new(seeds: [u64; 3], config: &TransformerConfig) -> Self {
        FeedForward {
            linear1: Linear::new(seeds[0]),
            dropout: Dropout::new(config.dropout, seeds[2]),
            linear2: Linear::new(seeds[1]),
            activation: config.activation,
        }
    }
}

#[layer]
impl<T: FloatDType, const E: usize, const FF: usize, D: Device, K: BiasKind, B: Dim, L: Dim>
    Module<Value<T, (B, L, Const<E>), D>> for FeedForward<T, E, FF, D, K>
{
    type Output = Value<T, (B, L, Const<E>), D>;
    fn forward(&self, x: Value<T, (B, L, Const<E>), D>) -> Self::Output {
        let hidden = self.linear1.forward(x);
        let hidden = match self.activation {
            FeedForwardActivation::Relu => hidden.relu(),
            FeedForwardActivation::Gelu => hidden.gelu_erf(),
        };
        self.linear2.forward(self.dropout.forward(hidden))
    }
}

/// A block with its residual connection and norm in PyTorch's order: `x + block(norm(x))` when `norm_first`,
/// else `norm(x + block(x))`.
fn residual<X: Clone + Add<X, Output = X>, N: Module<X, Output = X>>(
    x: X,
    norm: &N,
    norm_first: bool,
    block: impl FnOnce(X) -> X,
) -> X {
    if norm_first {
        block(norm.forward(x.clone())) + x
    } else {
        norm.forward(block(x.clone()) + x)
    }
}

/// Seeds for a layer's parts from the layer's `seed`.
fn seeds(seed: u64) -> impl Fn(u64) -> u64 {
    move |i| seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i)
}

/// A layer's attention heads, which a per-head mask's rows count (`B·HEADS`): what the stacks' `try_` forms
/// check masks against.
pub trait AttentionHeads {
    /// The heads' count.
    const HEADS: usize;
}

impl<
        T: FloatDType,
        const E: usize,
        const HEADS: usize,
        const HEAD_DIM: usize,
        const FF: usize,
        D: Device,
        B: BiasKind,
    > AttentionHeads for TransformerEncoderLayer<T, E, HEADS, HEAD_DIM, FF, D, B>
{
    const HEADS: usize = HEADS;
}

impl<
        T: FloatDType,
        const E: usize,
        const HEADS: usize,
        const HEAD_DIM: usize,
        const FF: usize,
        D: Device,
        B: BiasKind,
    > AttentionHeads for TransformerDecoderLayer<T, E, HEADS, HEAD_DIM, FF, D, B>
{
    const HEADS: usize = HEADS;
}
