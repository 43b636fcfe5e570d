//! Building blocks for models, generic over dtype and device: [`Module`] (layers compose as tuples, checked
//! when the model type is declared), [`Linear`], [`Conv1d`], [`Conv2d`], [`ConvTranspose2d`], pooling (fixed
//! and adaptive), [`Upsample`], [`Flatten`], normalisation ([`LayerNorm`], [`RMSNorm`], [`BatchNorm`],
//! [`GroupNorm`], [`InstanceNorm`]), [`Embedding`], [`Dropout`], activations, attention
//! ([`MultiheadAttention`], [`TransformerEncoderLayer`], [`TransformerEncoder`]), recurrent layers ([`LSTM`],
//! [`GRU`], [`RNN`]), parameter walking
//! ([`Parameters`], with buffers and the training mode) and losses ([`loss`]). The normalisations are also
//! methods of plain and traced values, as PyTorch's `torch.nn.functional` has them ([`functional`]).
//!
//! One training step (the README's example):
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::autograd::Traced;
//! use typed_tensor::nn::{Linear, Module, ReLU};
//! use typed_tensor::optim::{Adam, AdamConfig, Optimizer};
//!
//! let model = (Linear::<f32, 64, 32, Cpu>::new(0), ReLU, Linear::<f32, 32, 10, Cpu>::new(1)); // widths checked
//! let mut opt = Adam::new(&model, AdamConfig::default());
//! let x = Tensor::<f32, Rank2<16, 64>, Cpu>::randn(2);
//! let labels = Tensor::<u32, Rank1<16>, Cpu>::zeros();
//! let loss = model.forward(Traced::constant(x)).cross_entropy(&labels).mean_all();
//! let grads = loss.backward();             // exists only for rank-0 traced values
//! let gw: Tensor<f32, Rank2<32, 64>, Cpu> = grads.get(&model.0.weight); // the parameter's exact type
//! opt.step(&grads);                        // parameters updated in place
//! # assert_eq!(gw.dims().to_vec(), [32, 64]);
//! ```

mod activation;
mod attention;
mod batch_norm;
mod bias;
mod conv;
mod dropout;
mod embedding;
pub mod functional;
mod kv_cache;
mod linear;
pub mod loss;
mod module;
mod multihead;
mod norm;
mod norm_kind;
mod params;
mod pool;
mod positions;
mod recurrent;
mod rnn;
mod state;
mod transformer;

pub use activation::{
    GeLU, GeLUErf, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, Mish, PReLU, ReLU,
    ReLU6, SiLU, Sigmoid, Softplus, Softsign, Tanh, CELU, ELU, SELU,
};
pub use attention::Sdpa;
pub use batch_norm::{
    BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d, BatchNormConfig, RunningStats,
};
pub use bias::{BiasKind, NoBias, WithBias};
pub use conv::{
    Conv1d, Conv2d, Conv3d, ConvNd, ConvOutput, ConvTranspose1d, ConvTranspose2d, Transposed,
};
pub use dropout::Dropout;
pub use embedding::Embedding;
pub use kv_cache::{Cached, KvCache};
pub use linear::Linear;
pub use module::Module;
pub use multihead::{KeysOf, MhaMasks, MultiheadAttention};
pub use norm::{
    GroupNorm, InstanceNorm, InstanceNorm1d, InstanceNorm2d, LayerNorm, LayerNormOver, RMSNorm,
};
pub use norm_kind::{AnyRank, Spatial, TakesInput};
#[cfg(feature = "safetensors")]
pub(crate) use params::Cell;
pub use params::{join_name, Mode, Packed, ParamVisitor, Parameters};
pub use pool::{
    AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool, AvgPool2d, Flatten, MaxPool, MaxPool2d,
    PoolOutput, Upsample,
};
pub use positions::{sinusoidal_positions, sinusoidal_positions_with_shape, Rotary};
pub use recurrent::CellType;
pub use rnn::{
    Bidirectional, Directions, Forward, GruKind, LstmKind, Recurrent, RecurrentKind,
    RecurrentWeights, RnnArgs, RnnReluKind, RnnTanhKind, StateOf, GRU, LSTM, RNN,
};
pub use state::{Buffer, TrainingFlag};
pub use transformer::{
    AttentionHeads, FeedForward, FeedForwardActivation, TransformerConfig, TransformerDecoder,
    TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
};

/// The layers, the traits a model's code names, and the losses' module, for `use typed_tensor::nn::prelude::*;`
/// beside the crate's prelude.
///
/// ```
/// use typed_tensor::nn::prelude::*;
/// use typed_tensor::prelude::*;
/// // A 3x3 convolution with padding 1 keeps 6x6; 2x2 max pooling halves it.
/// let model = (Conv2d::<f32, 1, 4, 3, 6, 6, Cpu, 1, 1>::new(0), ReLU, MaxPool2d::<2, 2, 0, 3, 3>);
/// let x = Tensor::<f32, Rank4<2, 1, 6, 6>, Cpu>::zeros();
/// let y: Tensor<f32, Rank4<2, 4, 3, 3>, Cpu> = model.forward(x);
/// # assert_eq!(y.dims().to_vec(), [2, 4, 3, 3]);
/// ```
pub mod prelude {
    pub use super::loss;
    pub use super::{
        AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool, AvgPool2d, BatchNorm, BatchNorm1d,
        BatchNorm2d, BatchNorm3d, BatchNormConfig, Conv1d, Conv2d, Conv3d, ConvTranspose1d,
        ConvTranspose2d, Dropout, Embedding, Flatten, GeLU, GeLUErf, GroupNorm, Hardsigmoid,
        Hardswish, Hardtanh, InstanceNorm, InstanceNorm1d, InstanceNorm2d, LayerNorm,
        LayerNormOver, LeakyReLU, Linear, LogSigmoid, MaxPool, MaxPool2d, Mish, Module, PReLU,
        Parameters, RMSNorm, ReLU, ReLU6, SiLU, Sigmoid, Softplus, Softsign, Tanh, Upsample, CELU,
        ELU, SELU,
    };
}

/// Writes a layer's [`Module`] impl once for both kinds of value it runs on: put `#[layer]` on an
/// `impl Module<Value<T, S, D>> for MyLayer` block, and it is compiled twice, with every `Value` read as
/// [`Tensor`](crate::Tensor) (inference: nothing is recorded) and as [`Traced`](crate::autograd::Traced)
/// (training: each op records its backward rule). Read a parameter as the input's kind with
/// `Value::from(&self.weight)` (a `From<&Var>` that gives [`Var::value`](crate::autograd::Var::value) or
/// [`Var::trace`](crate::autograd::Var::trace)); the body may call any op that both kinds have. Every layer in
/// this module is written this way, and a shape error quotes the impl as written. An inherent impl of
/// `Value<T, S, D>` works too: [`functional`] writes its methods once for both kinds so.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::{Traced, Var};
/// use typed_tensor::nn::{layer, Module};
///
/// /// `x W^T` with no bias, for rows of width `I`.
/// struct Project<const I: usize, const O: usize> {
///     weight: Var<f32, Rank2<O, I>, Cpu>,
/// }
///
/// #[layer]
/// /// Runs on `Tensor` and on `Traced` rows alike.
/// impl<const I: usize, const O: usize, const B: usize> Module<Value<f32, Rank2<B, I>, Cpu>> for Project<I, O> {
///     type Output = Value<f32, Rank2<B, O>, Cpu>;
///     fn forward(&self, x: Value<f32, Rank2<B, I>, Cpu>) -> Self::Output {
///         x.matmul(&Value::from(&self.weight).t())
///     }
/// }
///
/// let layer = Project { weight: Var::new(Tensor::from_array([[1., 2.], [3., 4.], [5., 6.]])) };
/// let x = Tensor::<f32, _, Cpu>::from_array([[1., 1.]]);
/// let y = layer.forward(x.clone()); // a plain tensor
/// assert_eq!(y.to_array(), [[3., 7., 11.]]);
/// let loss = layer.forward(Traced::constant(x)).sum_all(); // a traced value
/// let g: Tensor<f32, Rank2<3, 2>, Cpu> = loss.backward().get(&layer.weight);
/// assert_eq!(g.to_array(), [[1., 1.], [1., 1.], [1., 1.]]);
/// ```
///
/// The names it writes are absolute (`::typed_tensor::Tensor`), so the crate must be a dependency under its
/// own name; an impl that never names `Value` is refused (its two copies would be the same impl).
pub use typed_tensor_macros::layer;
/// `#[derive(Parameters)]`: the walk over a struct's fields (see the trait [`Parameters`]).
pub use typed_tensor_macros::Parameters;
