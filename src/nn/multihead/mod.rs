//! Multi-head attention, PyTorch's `nn.MultiheadAttention` with `batch_first=True`: its parameters under its
//! names and file shapes (the packed `in_proj_weight (3E, E)`), composed from
//! [`scaled dot-product attention`](crate::Tensor::scaled_dot_product_attention) on the heads; masks.rs holds its
//! masks with their meanings.

mod masks;

pub use masks::{KeysOf, MhaMasks};

use masks::additive;

use super::attention::Sdpa;
use super::{layer, BiasKind, Dropout, Linear, Module, Parameters, WithBias};
use crate::autograd::Var;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{Axis, Const, Dim, Rank2, Rank3};
use crate::tensor::{IndexOp, Tensor};

/// Multi-head attention over `HEADS` heads of `HEAD_DIM` features, embedding width `E = HEADS · HEAD_DIM`
/// (PyTorch's `nn.MultiheadAttention(E, HEADS, bias=.., batch_first=True)`; a width that is not the product
/// does not build, naming the three numbers). Inputs are batch-first: queries `(B, L, E)`, keys and values
/// `(B, S, E)`; PyTorch's default sequence-first `(L, B, E)` is `x.transpose::<Axis<0>, Axis<1>>()` (a view)
/// before and after.
///
/// `forward(x)` is self-attention with no mask; [`Self::attend`] takes separate keys and values and the masks
/// ([`MhaMasks`]) and returns the per-head attention weights when asked. Parameters under PyTorch's names:
/// `in_proj_weight` (held as `(3, E, E)`, the query, key and value projections typed apart, stored as PyTorch's
/// `(3E, E)`), `in_proj_bias` (`(3, E)`, stored as `(3E,)`), `out_proj.weight`, `out_proj.bias`; with
/// [`NoBias`](super::NoBias) (PyTorch's `bias=False`) none of the biases. PyTorch's `kdim`/`vdim` (keys and
/// values of other widths, three separate projection weights) are not here yet.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Module, MultiheadAttention};
/// let attn = MultiheadAttention::<f32, 16, 4, 4, Cpu>::new(0); // 4 heads of 4: width 16
/// let x = Tensor::<f32, Rank3<2, 5, 16>, Cpu>::randn(1);
/// let y: Tensor<f32, Rank3<2, 5, 16>, Cpu> = attn.forward(x);
/// ```
///
/// A width that is not heads x head width does not build:
///
/// ```compile_fail,E0080
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::MultiheadAttention;
/// // "MultiheadAttention: embed_dim 16 is not num_heads 4 x head_dim 8 = 32; 4 heads of 16 need head_dim 4"
/// let attn = MultiheadAttention::<f32, 16, 4, 8, Cpu>::new(0);
/// ```
#[derive(Parameters)]
pub struct MultiheadAttention<
    T: FloatDType,
    const E: usize,
    const HEADS: usize,
    const HEAD_DIM: usize,
    D: Device,
    B: BiasKind = WithBias,
> {
    /// `(3, E, E)`: the query, key and value projections' weights, stored as PyTorch's `(3E, E)`.
    #[parameters(packed)]
    pub in_proj_weight: Var<T, Rank3<3, E, E>, D>,
    /// `(3, E)`: their biases, stored as `(3E,)`; `()` without biases.
    #[parameters(packed)]
    pub in_proj_bias: B::Param<T, Rank2<3, E>, D>,
    /// The output projection (`out_proj.weight`, `out_proj.bias`).
    pub out_proj: Linear<T, E, E, D, B>,
    /// Dropout of the attention weights while training (PyTorch's `dropout`; probability 0 by default).
    pub dropout: Dropout,
}

/// The build-time check that the embedding width is the heads' total width.
struct HeadsSplit<const E: usize, const HEADS: usize, const HEAD_DIM: usize>;
impl<const E: usize, const HEADS: usize, const HEAD_DIM: usize> HeadsSplit<E, HEADS, HEAD_DIM> {
    const OK: () = if HEADS == 0 || !matches!(HEADS.checked_mul(HEAD_DIM), Some(e) if e == E) {
        let head = t("MultiheadAttention: embed_dim ");
        let product = [
            n(E),
            t(" is not num_heads "),
            n(HEADS),
            t(" x head_dim "),
            n(HEAD_DIM),
        ];
        let product = [
            head,
            product[0],
            product[1],
            product[2],
            product[3],
            product[4],
            t(" = "),
        ];
        if HEADS > 0 && E % HEADS == 0 {
            size_check::concat_panic(&[
                &product,
                &[
                    n(HEADS.saturating_mul(HEAD_DIM)),
                    t("; "),
                    n(HEADS),
                    t(" heads of "),
                    n(E),
                ],
                &[t(" need head_dim "), n(E / HEADS)],
            ]);
        } else {
            size_check::concat_panic(&[
                &product,
                &[
                    n(HEADS.saturating_mul(HEAD_DIM)),
                    t("; "),
                    n(HEADS),
                    t(" heads do not divide "),
                ],
                &[n(E)],
            ]);
        }
    };
}

impl<
        T: FloatDType,
        const E: usize,
        const HEADS: usize,
        const HEAD_DIM: usize,
        D: Device,
        B: BiasKind,
    > MultiheadAttention<T, E, HEADS, HEAD_DIM, D, B>
{
    /// PyTorch's initialisation from `seed`: `in_proj_weight` Xavier-uniform over its `(3E, E)` form (bound
    /// `sqrt(6 / 4E)`), the biases zero, `out_proj.weight` uniform in `±1/sqrt(E)`; no dropout.
    pub fn new(seed: u64) -> Self {
        let () = HeadsSplit::<E, HEADS, HEAD_DIM>::OK;
        let bound = (6.0 / (4 * E) as f64).sqrt();
        let out_bound = 1.0 / (E as f64).sqrt();
        MultiheadAttention {
            in_proj_weight: Var::create(Tensor::uniform(-bound, bound, seed)),
            in_proj_bias: B::make(Tensor::zeros),
            out_proj: Linear {
                weight: Var::create(Tensor::uniform(-out_bound, out_bound, seed ^ 0x5bd1_e995)),
                bias: B::make(Tensor::zeros),
            },
            dropout: Dropout::new(0.0, seed),
        }
    }

    /// Every parameter zero: the layer to load a checkpoint into (`io::load`).
    pub fn zeros() -> Self {
        let () = HeadsSplit::<E, HEADS, HEAD_DIM>::OK;
        MultiheadAttention {
            in_proj_weight: Var::create(Tensor::zeros()),
            in_proj_bias: B::make(Tensor::zeros),
            out_proj: Linear::zeros(),
            dropout: Dropout::new(0.0, 0),
        }
    }

    /// This layer with dropout of probability `p` on the attention weights while training, masks from `seed`.
    pub fn with_dropout(self, p: f64, seed: u64) -> Self {
        MultiheadAttention {
            dropout: Dropout::new(p, seed),
            ..self
        }
    }

    /// Attention of `query` `(B, L, E)` over `key` and `value` `(B, S, E)` with `masks` (PyTorch's
    /// `forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights=False,
    /// is_causal)`): the output `(B, L, E)` and, when [`MhaMasks::need_weights`] asked for them, the attention
    /// weights per head `(B, HEADS, L, S)` (PyTorch's default averages them over the heads: `.mean::<Axis<1>>()`
    /// of these). Plain tensors and traced values alike.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{MhaMasks, MultiheadAttention};
    /// let attn = MultiheadAttention::<f32, 8, 2, 4, Cpu>::new(0);
    /// let q = Tensor::<f32, Rank3<2, 3, 8>, Cpu>::randn(1);
    /// let kv = Tensor::<f32, Rank3<2, 4, 8>, Cpu>::randn(2);
    /// // The second sample's last key is padding (non-zero: ignored, PyTorch's meaning).
    /// let padding = Tensor::<u8, Rank2<2, 4>, Cpu>::from_array([[0, 0, 0, 0], [0, 0, 0, 1]]);
    /// let (y, weights) = attn.attend(q, kv.clone(), kv, MhaMasks::new().key_padding_mask(&padding).need_weights());
    /// let w = weights.unwrap(); // (2, 2, 3, 4)
    /// assert_eq!(w.i((1, 0, 0, 3)).to_scalar(), 0.0);
    /// # assert_eq!(y.dims().to_vec(), [2, 3, 8]);
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn attend<'m, Q, K: KeysOf>(
        &self,
        query: Q,
        key: K,
        value: K,
        masks: MhaMasks<'m, T, K, D>,
    ) -> <Self as Module<(Q, K, K, MhaMasks<'m, T, K, D>)>>::Output
    where
        Self: Module<(Q, K, K, MhaMasks<'m, T, K, D>)>,
    {
        self.forward((query, key, value, masks))
    }

    /// [`Self::attend`], returning `Error::AxisSize` rather than panicking when a mask's runtime-sized dims differ
    /// from the batch's, the queries' or the keys' lengths (naming the mask), or the keys' batch from the queries'
    /// or the values' batch or length from the keys' (naming the key or the value).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{MhaMasks, MultiheadAttention};
    /// let attn = MultiheadAttention::<f32, 8, 2, 4, Cpu>::new(0);
    /// let x = Tensor::<f32, Rank3<1, 3, 8>, Cpu>::randn(1);
    /// let short = Tensor::<u8, (usize, Const<3>), Cpu>::zeros_with_shape((2, Const));
    /// let err = attn.try_attend(x.clone(), x.clone(), x, MhaMasks::new().attn_mask(&short)).unwrap_err();
    /// assert_eq!(err.to_string(), "MultiheadAttention attn_mask: axis 0 has size 2, expected 3");
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn try_attend<'m, Q: KeysOf, K: KeysOf>(
        &self,
        query: Q,
        key: K,
        value: K,
        masks: MhaMasks<'m, T, K, D>,
    ) -> crate::Result<<Self as Module<(Q, K, K, MhaMasks<'m, T, K, D>)>>::Output>
    where
        Self: Module<(Q, K, K, MhaMasks<'m, T, K, D>)>,
    {
        masks.check_for("MultiheadAttention key", HEADS, &query, &key)?;
        let (keys, values) = (key.batch_and_len(), value.batch_and_len());
        if let Some(axis) = [keys.0 != values.0, keys.1 != values.1]
            .iter()
            .position(|&d| d)
        {
            let (expected, found) = if axis == 0 {
                (keys.0, values.0)
            } else {
                (keys.1, values.1)
            };
            return Err(crate::Error::AxisSize {
                op: "MultiheadAttention value",
                axis,
                expected,
                found,
            });
        }
        Ok(self.forward((query, key, value, masks)))
    }
}

#[layer]
impl<
        'm,
        T: FloatDType,
        const E: usize,
        const HEADS: usize,
        const HEAD_DIM: usize,
        D: Device,
        K: BiasKind,
        B: Dim,
        L: Dim,
        S: Dim,
    >
    Module<(
        Value<T, (B, L, Const<E>), D>,
        Value<T, (B, S, Const<E>), D>,
        Value<T, (B, S, Const<E>), D>,
        MhaMasks<'m, T, Value<T, (B, S, Const<E>), D>, D>,
    )> for MultiheadAttention<T, E, HEADS, HEAD_DIM, D, K>
{
    type Output = (
        Value<T, (B, L, Const<E>), D>,
        Option<Value<T, (B, Const<HEADS>, L, S), D>>,
    );
    fn forward(
        &self,
        (query, key, value, masks): (
            Value<T, (B, L, Const<E>), D>,
            Value<T, (B, S, Const<E>), D>,
            Value<T, (B, S, Const<E>), D>,
            MhaMasks<'m, T, Value<T, (B, S, Const<E>), D>, D>,
        ),
    ) -> Self::Output {
        let () = HeadsSplit::<E, HEADS, HEAD_DIM>::OK;
        /// `x W_i^T + b_i` split into heads: `(B, N, E)` -> `(B, HEADS, N, HEAD_DIM)`.
        fn project<
            T: FloatDType,
            B: Dim,
            N: Dim,
            const E: usize,
            const HEADS: usize,
            const HEAD_DIM: usize,
            D: Device,
        >(
            x: &Value<T, (B, N, Const<E>), D>,
            weight: &Value<T, Rank3<3, E, E>, D>,
            bias: Option<&Value<T, Rank2<3, E>, D>>,
            i: usize,
        ) -> Value<T, (B, Const<HEADS>, N, Const<HEAD_DIM>), D> {
            let y = x.matmul(&weight.i(i).t());
            let y = match bias {
                Some(b) => y + &b.i(i),
                None => y,
            };
            let (b, len, _) = y.shape();
            y.reshape_with_shape((b, len, Const::<HEADS>, Const::<HEAD_DIM>))
                .transpose::<Axis<1>, Axis<2>>()
        }
        let weight = Value::from(&self.in_proj_weight);
        let bias = K::var(&self.in_proj_bias).map(Value::from);
        let bias = bias.as_ref();
        let q = project::<T, B, L, E, HEADS, HEAD_DIM, D>(&query, &weight, bias, 0);
        let k = project::<T, B, S, E, HEADS, HEAD_DIM, D>(&key, &weight, bias, 1);
        let v = project::<T, B, S, E, HEADS, HEAD_DIM, D>(&value, &weight, bias, 2);
        let (b, l, _) = query.shape();
        let s = key.shape().1;
        let options = Sdpa::new();
        let options = if masks.causal {
            options.causal()
        } else {
            options
        };
        let options = if self.dropout.p() > 0.0 {
            options.dropout(&self.dropout)
        } else {
            options
        };
        /// The heads' outputs `(B, HEADS, L, HEAD_DIM)` and, when `need`, the attention weights: without weights
        /// to return through scaled_dot_product_attention, which takes the fused path where it applies (the masks
        /// arrive as one additive mask).
        #[allow(clippy::type_complexity)]
        fn heads<
            T: FloatDType,
            B: Dim,
            const H: usize,
            L: Dim,
            S: Dim,
            const HD: usize,
            D: Device,
            M,
        >(
            (q, k, v): (
                &Value<T, (B, Const<H>, L, Const<HD>), D>,
                &Value<T, (B, Const<H>, S, Const<HD>), D>,
                &Value<T, (B, Const<H>, S, Const<HD>), D>,
            ),
            options: Sdpa<'_, T, M, D>,
            need: bool,
        ) -> (
            Value<T, (B, Const<H>, L, Const<HD>), D>,
            Option<Value<T, (B, Const<H>, L, S), D>>,
        )
        where
            M: crate::shape::BroadcastTo<(B, Const<H>, L, S)>,
        {
            if need {
                let weights = q.attention_weights(k, options);
                (weights.matmul(v), Some(weights))
            } else {
                (q.scaled_dot_product_attention(k, v, options), None)
            }
        }
        let (qkv, need) = ((&q, &k, &v), masks.need_weights);
        // One additive mask over every head alike, or per head when a mask differs between heads.
        let (heads, weights) = if masks.per_head() {
            match additive(&masks, (b, Const::<HEADS>, l, s), HEADS) {
                Some(mask) => heads(qkv, options.additive_mask(&mask), need),
                None => heads(qkv, options, need),
            }
        } else {
            match additive(&masks, (b, Const::<1>, l, s), HEADS) {
                Some(mask) => heads(qkv, options.additive_mask(&mask), need),
                None => heads(qkv, options, need),
            }
        };
        let joined = heads
            .transpose::<Axis<1>, Axis<2>>()
            .reshape_with_shape((b, l, Const::<E>));
        (self.out_proj.forward(joined), weights)
    }
}

#[layer]
impl<
        T: FloatDType,
        const E: usize,
        const HEADS: usize,
        const HEAD_DIM: usize,
        D: Device,
        K: BiasKind,
        B: Dim,
        L: Dim,
    > Module<Value<T, (B, L, Const<E>), D>> for MultiheadAttention<T, E, HEADS, HEAD_DIM, D, K>
{
    type Output = Value<T, (B, L, Const<E>), D>;
    fn forward(&self, x: Value<T, (B, L, Const<E>), D>) -> Self::Output {
        self.attend(x.clone(), x.clone(), x, MhaMasks::new()).0
    }
}
