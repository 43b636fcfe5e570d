//! Multi-head attention, PyTorch's `nn.MultiheadAttention` with `batch_first=True`: its parameters under its
//! names and file shapes (the packed `in_proj_weight (3E, E)`), its masks with their meanings, composed from
//! [`scaled dot-product attention`](crate::Tensor::attention_weights) on the heads.

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

    /// [`Self::attend`], returning `Error::AxisSize` (naming the mask) when a mask's runtime-sized dims differ
    /// from the batch's, the queries' or the keys' lengths, rather than panicking.
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
        let (batch, l) = query.batch_and_len();
        masks.check(batch, l, key.batch_and_len().1)?;
        Ok(self.forward((query, key, value, masks)))
    }
}

impl<T: FloatDType, M: crate::shape::Shape, D: Device> Clone for KeyMask<'_, T, M, D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: FloatDType, M: crate::shape::Shape, D: Device> Copy for KeyMask<'_, T, M, D> {}

impl<T: FloatDType, K: KeysOf, D: Device> Clone for MhaMasks<'_, T, K, D> {
    fn clone(&self) -> Self {
        *self
    }
}
/// Masks are references and flags: a stack of layers hands the same ones to each.
impl<T: FloatDType, K: KeysOf, D: Device> Copy for MhaMasks<'_, T, K, D> {}

/// A mask over keys: non-zero where a key is blocked (PyTorch's boolean masks in `nn.MultiheadAttention`, where
/// `True` means "ignore"), or added to the scores (its float masks; `-inf` blocks).
enum KeyMask<'a, T: FloatDType, M: crate::shape::Shape, D: Device> {
    Blocked(&'a Tensor<u8, M, D>),
    Add(&'a Tensor<T, M, D>),
}

/// The masks and options of [`MultiheadAttention::attend`], PyTorch's keyword arguments: a `key_padding_mask`
/// `(B, S)` and an `attn_mask` `(L, S)`, each boolean (non-zero **ignores** the key: the meaning PyTorch's
/// `nn.MultiheadAttention` gives, the opposite of `F.scaled_dot_product_attention`'s) or additive; causal
/// masking; and whether to return the attention weights. `K` is the keys' type, `(B, S, E)`, from which the
/// masks' shapes follow.
///
/// A query left with no key (every key padding, or blocked) gets an output of the out-projection's bias alone
/// (zero attention weights), as [`scaled_dot_product_attention`](crate::Tensor::scaled_dot_product_attention)
/// gives zeros, as PyTorch's `F.scaled_dot_product_attention` does; PyTorch 2.5.1's `nn.MultiheadAttention` gives
/// NaN there, with or without weights (checked): a padded batch entry's NaN would reach the loss.
pub struct MhaMasks<'a, T: FloatDType, K: KeysOf, D: Device> {
    key_padding: Option<KeyMask<'a, T, BatchByKeys<K>, D>>,
    attn: Option<KeyMask<'a, T, (usize, K::Len), D>>,
    causal: bool,
    need_weights: bool,
}

/// The shape `(B, S)` of a key padding mask for keys `K`.
type BatchByKeys<K> = (<K as KeysOf>::Batch, <K as KeysOf>::Len);

/// The batch and length dims of a batch-first sequence `(B, S, E)`, plain or traced: keys, from which the
/// masks' shapes follow, or queries.
pub trait KeysOf {
    /// `B`.
    type Batch: Dim;
    /// `S`.
    type Len: Dim;
    /// `(B, S)` as sizes.
    fn batch_and_len(&self) -> (usize, usize);
}

impl<T: FloatDType, B: Dim, S: Dim, E: Dim, D: Device> KeysOf for Tensor<T, (B, S, E), D> {
    type Batch = B;
    type Len = S;
    fn batch_and_len(&self) -> (usize, usize) {
        let (b, s, _) = self.shape();
        (b.size(), s.size())
    }
}

impl<T: FloatDType, B: Dim, S: Dim, E: Dim, D: Device> KeysOf
    for crate::autograd::Traced<T, (B, S, E), D>
{
    type Batch = B;
    type Len = S;
    fn batch_and_len(&self) -> (usize, usize) {
        self.value.batch_and_len()
    }
}

impl<T: FloatDType, K: KeysOf, D: Device> Default for MhaMasks<'_, T, K, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, T: FloatDType, K: KeysOf, D: Device> MhaMasks<'a, T, K, D> {
    /// No mask, not causal, no weights returned.
    pub fn new() -> Self {
        MhaMasks {
            key_padding: None,
            attn: None,
            causal: false,
            need_weights: false,
        }
    }

    /// `(B, S)`: non-zero where a sample's key is padding, ignored by every query (PyTorch's boolean
    /// `key_padding_mask`).
    pub fn key_padding_mask(self, mask: &'a Tensor<u8, (K::Batch, K::Len), D>) -> Self {
        MhaMasks {
            key_padding: Some(KeyMask::Blocked(mask)),
            ..self
        }
    }

    /// `(B, S)`: added to every query's score of a sample's key (PyTorch's float `key_padding_mask`).
    pub fn additive_key_padding_mask(self, mask: &'a Tensor<T, (K::Batch, K::Len), D>) -> Self {
        MhaMasks {
            key_padding: Some(KeyMask::Add(mask)),
            ..self
        }
    }

    /// `(L, S)`: non-zero where query `l` may not attend to key `s`, in every sample and head (PyTorch's boolean
    /// 2-D `attn_mask`; its `(B·HEADS, L, S)` form is not taken here). `L` is a runtime dim here; a mask of
    /// other length than the queries' panics naming the mask, the axis and both sizes ([`MultiheadAttention::try_attend`]:
    /// the same as an `Err`).
    pub fn attn_mask(self, mask: &'a Tensor<u8, (usize, K::Len), D>) -> Self {
        MhaMasks {
            attn: Some(KeyMask::Blocked(mask)),
            ..self
        }
    }

    /// `(L, S)`: added to the scores (PyTorch's float `attn_mask`).
    pub fn additive_attn_mask(self, mask: &'a Tensor<T, (usize, K::Len), D>) -> Self {
        MhaMasks {
            attn: Some(KeyMask::Add(mask)),
            ..self
        }
    }

    /// Query `l` attends to keys `0..=l` only, on top of the masks (what PyTorch's `is_causal` hint with
    /// `generate_square_subsequent_mask` as `attn_mask` does).
    pub fn causal(self) -> Self {
        MhaMasks {
            causal: true,
            ..self
        }
    }

    /// Returns the attention weights per head as well (PyTorch's `need_weights=True,
    /// average_attn_weights=False`).
    pub fn need_weights(self) -> Self {
        MhaMasks {
            need_weights: true,
            ..self
        }
    }
}

/// A `(B, 1, L, S)` mask over every head's scores.
type PerHeads<T, B, L, S, D> = Tensor<T, (B, Const<1>, L, S), D>;

impl<T: FloatDType, K: KeysOf, D: Device> MhaMasks<'_, T, K, D> {
    /// `Error::AxisSize` naming the mask whose runtime-sized dims differ from the batch `b`, the queries' length
    /// `l` or the keys' length `s`.
    pub(crate) fn check(&self, b: usize, l: usize, s: usize) -> crate::Result<()> {
        if let Some(mask) = &self.key_padding {
            mask.check("MultiheadAttention key_padding_mask", [b, s])?;
        }
        if let Some(mask) = &self.attn {
            mask.check("MultiheadAttention attn_mask", [l, s])?;
        }
        Ok(())
    }
}

/// `(B, 1, L, S)` masks: where keys are blocked and what is added to the scores.
type Masks<T, B, L, S, D> = (
    Option<PerHeads<u8, B, L, S, D>>,
    Option<PerHeads<T, B, L, S, D>>,
);

/// The masks of `masks` for `(B, HEADS, L, S)` scores, as one additive `(B, 1, L, S)` mask (`-inf` where
/// blocked), or `None` when there is none.
#[track_caller]
fn additive<T: FloatDType, B: Dim, L: Dim, S: Dim, D: Device, K: KeysOf<Batch = B, Len = S>>(
    masks: &MhaMasks<'_, T, K, D>,
    shape: (B, Const<1>, L, S),
) -> Option<PerHeads<T, B, L, S, D>> {
    let (b, _, l, s) = shape;
    crate::tensor::or_panic(masks.check(b.size(), l.size(), s.size()));
    let mut out: Masks<T, B, L, S, D> = (None, None);
    let mut add = |mask: KeyMaskOf<T, B, L, S, D>| match mask {
        KeyMaskOf::Blocked(m) => {
            out.0 = Some(match out.0.take() {
                Some(old) => old.logical_or(&m),
                None => m,
            })
        }
        KeyMaskOf::Add(m) => {
            out.1 = Some(match out.1.take() {
                Some(old) => old + &m,
                None => m,
            })
        }
    };
    if let Some(mask) = &masks.key_padding {
        add(match mask {
            KeyMask::Blocked(m) => KeyMaskOf::Blocked(
                m.reshape_with_shape((b, Const::<1>, Const::<1>, s))
                    .broadcast_with_shape(shape),
            ),
            KeyMask::Add(m) => KeyMaskOf::Add(
                m.reshape_with_shape((b, Const::<1>, Const::<1>, s))
                    .broadcast_with_shape(shape),
            ),
        });
    }
    if let Some(mask) = &masks.attn {
        add(match mask {
            KeyMask::Blocked(m) => KeyMaskOf::Blocked(
                m.reshape_with_shape((Const::<1>, Const::<1>, l, s))
                    .broadcast_with_shape(shape),
            ),
            KeyMask::Add(m) => KeyMaskOf::Add(
                m.reshape_with_shape((Const::<1>, Const::<1>, l, s))
                    .broadcast_with_shape(shape),
            ),
        });
    }
    match out {
        (None, None) => None,
        (blocked, added) => {
            let added = added.unwrap_or_else(|| Tensor::zeros_with_shape(shape));
            Some(match blocked {
                Some(b) => added.masked_fill(&b, T::from_f64(f64::NEG_INFINITY)),
                None => added,
            })
        }
    }
}

/// A key mask stretched to `(B, 1, L, S)`.
enum KeyMaskOf<T: FloatDType, B: Dim, L: Dim, S: Dim, D: Device> {
    Blocked(PerHeads<u8, B, L, S, D>),
    Add(PerHeads<T, B, L, S, D>),
}

impl<T: FloatDType, M: crate::shape::Shape, D: Device> KeyMask<'_, T, M, D> {
    /// `Error::AxisSize` naming the mask (`op`) unless its two dims are `expected` (runtime dims can differ;
    /// static ones are checked by the types).
    fn check(&self, op: &'static str, expected: [usize; 2]) -> crate::Result<()> {
        let dims = match self {
            KeyMask::Blocked(m) => m.dims(),
            KeyMask::Add(m) => m.dims(),
        };
        for (axis, size) in expected.into_iter().enumerate() {
            if dims[axis] != size {
                return Err(crate::Error::AxisSize {
                    op,
                    axis,
                    expected: size,
                    found: dims[axis],
                });
            }
        }
        Ok(())
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
        let mask = additive(&masks, (b, Const::<1>, l, s));
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
        // (B, HEADS, L, HEAD_DIM); without weights to return, through scaled_dot_product_attention, which takes
        // the fused path where it applies (no mask but causal).
        let (heads, weights) = match (&mask, masks.need_weights) {
            (Some(mask), true) => {
                let weights = q.attention_weights(&k, options.additive_mask(mask));
                (weights.matmul(&v), Some(weights))
            }
            (None, true) => {
                let weights = q.attention_weights(&k, options);
                (weights.matmul(&v), Some(weights))
            }
            (Some(mask), false) => (
                q.scaled_dot_product_attention(&k, &v, options.additive_mask(mask)),
                None,
            ),
            (None, false) => (q.scaled_dot_product_attention(&k, &v, options), None),
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
