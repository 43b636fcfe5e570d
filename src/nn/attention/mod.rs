//! Scaled dot-product attention, PyTorch's `F.scaled_dot_product_attention`, composed from the library's ops
//! (a batched matmul, the masks, `softmax` along the last axis, a second matmul), so its gradient comes from
//! theirs; written once for plain and traced values (`#[layer]` on an inherent impl). Queries are
//! `(B, H, L, E)`, keys `(B, HK, S, E)`, values `(B, HK, S, EV)`; `L` and `S` may differ, and with fewer
//! key/value heads than query heads (grouped-query attention) each key/value head serves `H / HK` query heads.
//!
//! A query whose every key is masked gets an output row of zeros, as PyTorch's reference (math) path gives since
//! 2.5 (`_safe_softmax`: such a row's weights are 0, not the NaN of a softmax over nothing), and a zero gradient.
//!
//! On `Cpu`, f32 calls with or without a mask, causal masking or not, and no dropout that drops
//! (training, traced) take a fused path instead (fused.rs, the tiles in tiles.rs): the online softmax over tiles
//! of the scores, forward and backward, so memory grows with `L·E` rather than `L·S` (an additive mask is read
//! where it is, broadcast). At B = H = 8, L = S = 512, E = 64 it takes 0.29-0.37x the composed path's time causal,
//! 0.67-0.74x unmasked and 0.48x with a key padding mask (benches/README.md); at small sizes the two are even. A
//! boolean mask goes as the additive mask it means. [`Sdpa::composed`] chooses the composed path, the reference
//! the fused one is tested against.

mod fused;
mod tiles;

use super::dropout::DropoutInput;
use super::{layer, Dropout, Module};
use crate::dtype::FloatDType;
use crate::ops::{CmpOp, Device};
use crate::shape::size_check::{self, n, t};
use crate::shape::{Axis, BroadcastTo, Const, Dim, FromEnd, Last, Shape};
use crate::tensor::Tensor;

/// Which implementation an attention call runs (see the module's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// The fused path whenever it applies (the default).
    Fused,
    /// Always the composed path.
    Composed,
}

/// The mask of an attention call (see [`Sdpa`]).
enum Mask<'a, T: FloatDType, M: Shape, D: Device> {
    None,
    /// Non-zero where a query may attend to a key (PyTorch's boolean mask: true takes part).
    Keep(&'a Tensor<u8, M, D>),
    /// Added to the scores before the softmax (PyTorch's float mask; `-inf` masks).
    Add(&'a Tensor<T, M, D>),
}

/// The options of [`Tensor::scaled_dot_product_attention`], PyTorch's keyword arguments: an `attn_mask`
/// (boolean, [`Sdpa::keep_mask`], or additive, [`Sdpa::additive_mask`], either broadcast to `(B, H, L, S)` with
/// size-1 dims stretched), `is_causal` ([`Sdpa::causal`]) and `scale` ([`Sdpa::scale`], `1 / sqrt(E)` by default).
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::Sdpa;
/// let q = Tensor::<f32, Rank4<1, 2, 3, 4>, Cpu>::randn(0);
/// let (k, v) = (Tensor::<f32, Rank4<1, 2, 3, 4>, Cpu>::randn(1), Tensor::<f32, Rank4<1, 2, 3, 4>, Cpu>::randn(2));
/// let y = q.scaled_dot_product_attention(&k, &v, Sdpa::new().causal());
/// // The first query sees only the first key: its output is the first value row.
/// assert_eq!(y.i((0, 0, 0)).to_vec(), v.i((0, 0, 0)).to_vec());
/// ```
pub struct Sdpa<'a, T: FloatDType, M: Shape, D: Device> {
    mask: Mask<'a, T, M, D>,
    /// Causal masking with the queries' first position: query `l` sees keys `0..=offset + l`.
    causal: Option<usize>,
    scale: Option<f64>,
    /// Dropout of the attention weights (the layer's mode decides, as for any layer).
    dropout: Option<&'a Dropout>,
    /// Which path runs (see the module's docs).
    path: Path,
}

impl<T: FloatDType, D: Device> Sdpa<'static, T, (), D> {
    /// No mask, not causal, scale `1 / sqrt(E)`: PyTorch's defaults.
    pub fn new() -> Self {
        Sdpa {
            mask: Mask::None,
            causal: None,
            scale: None,
            dropout: None,
            path: Path::Fused,
        }
    }
}

impl<T: FloatDType, D: Device> Default for Sdpa<'static, T, (), D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, T: FloatDType, M: Shape, D: Device> Sdpa<'a, T, M, D> {
    /// Query `i` attends to keys `0..=i` only (PyTorch's `is_causal`: the top-left lower triangle of `(L, S)`),
    /// on top of any mask.
    pub fn causal(self) -> Self {
        self.causal_at(0)
    }

    /// Causal masking for queries that continue a sequence (incremental decoding with a [`KvCache`](super::KvCache)):
    /// query `l` stands at position `offset + l` and sees keys `0..=offset + l`. `causal()` is `causal_at(0)`,
    /// PyTorch's top-left alignment.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::Sdpa;
    /// // One new query after 2 cached positions sees all 3 keys.
    /// let q = Tensor::<f32, Rank4<1, 1, 1, 2>, Cpu>::ones();
    /// let k = Tensor::<f32, Rank4<1, 1, 3, 2>, Cpu>::zeros();
    /// let v = Tensor::<f32, Rank4<1, 1, 3, 1>, Cpu>::from_array([[[[3.], [6.], [9.]]]]);
    /// let y = q.scaled_dot_product_attention(&k, &v, Sdpa::new().causal_at(2));
    /// assert_eq!(y.to_array(), [[[[6.]]]]); // the mean of all three values
    /// ```
    pub fn causal_at(self, offset: usize) -> Self {
        Sdpa {
            causal: Some(offset),
            ..self
        }
    }

    /// Always the composed path (matmul, masks, softmax, matmul), never the fused one: the reference the fused
    /// path is tested against, and what to compare it with.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::Sdpa;
    /// let q = Tensor::<f32, Rank4<1, 2, 8, 4>, Cpu>::randn(0);
    /// let fused = q.scaled_dot_product_attention(&q, &q, Sdpa::new().causal()).to_vec();
    /// let composed = q.scaled_dot_product_attention(&q, &q, Sdpa::new().causal().composed()).to_vec();
    /// assert!(fused.iter().zip(&composed).all(|(a, b)| (a - b).abs() < 1e-5));
    /// ```
    pub fn composed(self) -> Self {
        Sdpa {
            path: Path::Composed,
            ..self
        }
    }

    /// The fused path whenever it applies (`Cpu`, f32, no mask but causal, no dropout): the default, named where
    /// a call wants to say so (memory that grows with `L·E` at any length; the backward pass recomputes the
    /// scores).
    pub fn fused(self) -> Self {
        Sdpa {
            path: Path::Fused,
            ..self
        }
    }

    /// The scores' factor for queries of `e` features: the one given, or `1 / sqrt(e)`.
    fn scale_for(&self, e: usize) -> f64 {
        self.scale.unwrap_or(1.0 / (e as f64).sqrt())
    }

    /// Multiplies the scores by `scale` instead of `1 / sqrt(E)`.
    pub fn scale(self, scale: f64) -> Self {
        Sdpa {
            scale: Some(scale),
            ..self
        }
    }

    /// Dropout of the attention weights after the softmax (PyTorch's `dropout_p`, which its attention layers
    /// pass only while training): `dropout`'s probability and seed stream, and its mode, so a model's `eval()`
    /// turns it off; plain tensors (inference) are never dropped.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{Dropout, Sdpa};
    /// let drop = Dropout::new(0.1, 7);
    /// let q = Tensor::<f32, Rank4<1, 1, 2, 4>, Cpu>::randn(0);
    /// let y = q.scaled_dot_product_attention(&q, &q, Sdpa::new().dropout(&drop));
    /// assert_eq!(y.to_vec(), q.scaled_dot_product_attention(&q, &q, Sdpa::new()).to_vec());
    /// ```
    pub fn dropout(self, dropout: &'a Dropout) -> Self {
        Sdpa {
            dropout: Some(dropout),
            ..self
        }
    }

    /// A boolean mask: a query attends to a key where `mask` is non-zero (PyTorch's `attn_mask` of `torch.bool`);
    /// any shape that broadcasts to `(B, H, L, S)`, size-1 dims stretched (`(L, S)`, `(B, 1, 1, S)`, ...).
    pub fn keep_mask<M2: Shape>(self, mask: &'a Tensor<u8, M2, D>) -> Sdpa<'a, T, M2, D> {
        Sdpa {
            mask: Mask::Keep(mask),
            causal: self.causal,
            scale: self.scale,
            dropout: self.dropout,
            path: self.path,
        }
    }

    /// An additive mask, added to the scaled scores (PyTorch's float `attn_mask`; `-inf` removes a key); shapes
    /// as for [`Self::keep_mask`].
    pub fn additive_mask<M2: Shape>(self, mask: &'a Tensor<T, M2, D>) -> Sdpa<'a, T, M2, D> {
        Sdpa {
            mask: Mask::Add(mask),
            causal: self.causal,
            scale: self.scale,
            dropout: self.dropout,
            path: self.path,
        }
    }
}

/// A `(B, H, L, S)` tensor of scores or of a mask over them.
type Scores<T, B, const H: usize, L, S, D> = Tensor<T, (B, Const<H>, L, S), D>;

/// The build-time check of grouped-query attention: `HK` key/value heads divide `H` query heads.
struct HeadsDivide<const H: usize, const HK: usize>;
impl<const H: usize, const HK: usize> HeadsDivide<H, HK> {
    const OK: () = if HK == 0 || H % HK != 0 {
        size_check::concat_panic(&[&[
            t("scaled_dot_product_attention: "),
            n(HK),
            t(" key/value heads do not divide "),
            n(H),
            t(" query heads; each key/value head serves H / HK query heads"),
        ]]);
    };
}

/// For each of `H` query heads, the key/value head it reads: `h / (H / HK)`.
fn head_of<D: Device, const H: usize, const HK: usize>() -> Tensor<u32, (Const<H>,), D> {
    let group = H / HK;
    let heads: alloc::vec::Vec<u32> = (0..H).map(|h| (h / group) as u32).collect();
    crate::tensor::or_panic(Tensor::from_vec(heads))
}

#[layer]
impl<T: FloatDType, B: Dim, const H: usize, L: Dim, E: Dim, D: Device>
    Value<T, (B, Const<H>, L, E), D>
{
    /// Attention of these queries `(B, H, L, E)` over `key` `(B, HK, S, E)` and `value` `(B, HK, S, EV)`
    /// (PyTorch's `F.scaled_dot_product_attention`): `softmax(q k^T * scale + mask) v`, `(B, H, L, EV)`. `HK` must
    /// divide `H` (grouped-query attention; a build error otherwise); the options are an [`Sdpa`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::Sdpa;
    /// // Two query heads sharing one key/value head, a key padding mask over the last key.
    /// let q = Tensor::<f64, Rank4<1, 2, 1, 2>, Cpu>::from_array([[[[1., 0.]], [[0., 1.]]]]);
    /// let k = Tensor::<f64, Rank4<1, 1, 2, 2>, Cpu>::from_array([[[[1., 0.], [0., 1.]]]]);
    /// let v = Tensor::<f64, Rank4<1, 1, 2, 1>, Cpu>::from_array([[[[10.], [20.]]]]);
    /// let keep = Tensor::<u8, Rank2<1, 2>, Cpu>::from_array([[1, 0]]);
    /// let y = q.scaled_dot_product_attention(&k, &v, Sdpa::new().keep_mask(&keep));
    /// assert_eq!(y.to_array(), [[[[10.]], [[10.]]]]); // only the first key takes part
    /// ```
    ///
    /// Key/value heads that do not divide the query heads do not build:
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::Sdpa;
    /// let q = Tensor::<f32, Rank4<1, 4, 2, 8>, Cpu>::zeros();
    /// let kv = Tensor::<f32, Rank4<1, 3, 2, 8>, Cpu>::zeros();
    /// // "scaled_dot_product_attention: 3 key/value heads do not divide 4 query heads"
    /// let y = q.scaled_dot_product_attention(&kv, &kv, Sdpa::new());
    /// ```
    #[track_caller]
    pub fn scaled_dot_product_attention<const HK: usize, S: Dim, EV: Dim, M>(
        &self,
        key: &Value<T, (B, Const<HK>, S, E), D>,
        value: &Value<T, (B, Const<HK>, S, EV), D>,
        options: Sdpa<'_, T, M, D>,
    ) -> Value<T, (B, Const<H>, L, EV), D>
    where
        M: BroadcastTo<(B, Const<H>, L, S)>,
    {
        let () = HeadsDivide::<H, HK>::OK;
        if options.path != Path::Composed && options.dropout.is_none_or(|d| !self.drops(d)) {
            let scale = options.scale_for(self.shape().3.size());
            let keep_as_added;
            let mask = match options.mask {
                Mask::None => Some(None),
                Mask::Add(add) => Some(Some(add)),
                // A boolean mask as the additive one it means (-inf where a key may not take part), where the fused
                // path can take it: one pass over the mask, which is not the scores' size unless the user made it so.
                Mask::Keep(keep) if fused::may_apply::<T, D>() => {
                    let minus = T::from_f64(f64::NEG_INFINITY);
                    let added = keep
                        .to_vec()
                        .into_iter()
                        .map(|k| if k == 0 { minus } else { T::ZERO });
                    let added = Tensor::from_vec_with_shape(keep.shape(), added.collect());
                    keep_as_added = crate::tensor::or_panic(added);
                    Some(Some(&keep_as_added))
                }
                Mask::Keep(_) => None,
            };
            if let Some(mask) = mask
                && let Some(out) = self.fused_attention(key, value, (scale, options.causal), mask)
            {
                return out;
            }
        }
        let value = value.per_query_head::<H>();
        self.weights(key, options).matmul(&value)
    }

    /// The attention weights of these queries over `key`, `(B, H, L, S)`: the softmax (after the masks, and
    /// the dropout when it is given and training) that [`Self::scaled_dot_product_attention`] multiplies the
    /// values by; what `nn.MultiheadAttention` returns with `need_weights`. Each row sums to 1, or is zeros for a
    /// query that may see no key.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::Sdpa;
    /// let q = Tensor::<f32, Rank4<1, 1, 2, 4>, Cpu>::randn(0);
    /// let k = Tensor::<f32, Rank4<1, 1, 3, 4>, Cpu>::randn(1);
    /// let w = q.attention_weights(&k, Sdpa::new().causal());
    /// assert_eq!(w.i((0, 0, 0)).to_vec()[1..], [0., 0.]); // the first query sees the first key only
    /// ```
    #[track_caller]
    pub fn attention_weights<const HK: usize, S: Dim, M>(
        &self,
        key: &Value<T, (B, Const<HK>, S, E), D>,
        options: Sdpa<'_, T, M, D>,
    ) -> Value<T, (B, Const<H>, L, S), D>
    where
        M: BroadcastTo<(B, Const<H>, L, S)>,
    {
        let () = HeadsDivide::<H, HK>::OK;
        self.weights(key, options)
    }

    /// [`Self::attention_weights`] once its callers checked the heads (the check in one place per call, so that
    /// a build error shows it once).
    fn weights<const HK: usize, S: Dim, M>(
        &self,
        key: &Value<T, (B, Const<HK>, S, E), D>,
        options: Sdpa<'_, T, M, D>,
    ) -> Value<T, (B, Const<H>, L, S), D>
    where
        M: BroadcastTo<(B, Const<H>, L, S)>,
    {
        let key = key.per_query_head::<H>();
        let scale = options.scale_for(self.shape().3.size());
        let scores = self.matmul(&key.transpose::<FromEnd<2>, Last>()) * T::from_f64(scale);
        let shape = scores.shape();
        let dropped = |weights: Value<T, (B, Const<H>, L, S), D>| match options.dropout {
            Some(dropout) => dropout.forward(weights),
            None => weights,
        };
        let future = |offset: usize| {
            let diagonal = i64::try_from(offset).map_or(i64::MAX, |o| o.saturating_add(1));
            Tensor::<u8, (L, S), D>::ones_with_shape((shape.2, shape.3)).triu(diagonal)
        };
        if let (Mask::None, Some(offset)) = (&options.mask, options.causal) {
            // Causal masking alone leaves every query key 0, so no row is empty and no guard is needed: one
            // `(L, S)` mask over every head (the general path below takes 2.4x as long).
            let scores = scores.masked_fill(&future(offset), T::from_f64(f64::NEG_INFINITY));
            return dropped(scores.softmax::<Last>());
        }
        // Where a query may not look (plain tensors: the masks carry no gradient), and the added scores.
        let mut blocked: Option<Scores<u8, B, H, L, S, D>> = None;
        let mut block = |more: Scores<u8, B, H, L, S, D>| {
            blocked = Some(match blocked.take() {
                Some(b) => b.logical_or(&more),
                None => more,
            });
        };
        let scores = match options.mask {
            Mask::None => scores,
            Mask::Keep(keep) => {
                block(keep.broadcast_with_shape(shape).logical_not());
                scores
            }
            Mask::Add(add) => {
                let add = add.broadcast_with_shape(shape);
                block(add.compare_scalar(CmpOp::Eq, T::from_f64(f64::NEG_INFINITY)));
                scores + &add
            }
        };
        if let Some(offset) = options.causal {
            block(future(offset).broadcast_with_shape(shape));
        }
        let Some(blocked) = blocked else {
            return dropped(scores.softmax::<Last>());
        };
        // A query that may see no key gets zeros (PyTorch's `_safe_softmax`); its scores are made finite first, so
        // that neither the softmax nor its gradient meets a row of `-inf` (0 / 0).
        let dead = blocked
            .all::<Last>()
            .unsqueeze::<Axis<3>>()
            .broadcast_with_shape(shape);
        let scores = scores
            .masked_fill(&blocked, T::from_f64(f64::NEG_INFINITY))
            .masked_fill(&dead, T::ZERO);
        dropped(scores.softmax::<Last>().masked_fill(&dead, T::ZERO))
    }
}

#[layer]
impl<T: FloatDType, B: Dim, const HK: usize, S: Dim, X: Dim, D: Device>
    Value<T, (B, Const<HK>, S, X), D>
{
    /// These keys or values `(B, HK, S, X)` as one head per query head, `(B, H, S, X)`: the same tensor when
    /// `HK == H`, else each head repeated for the `H / HK` query heads it serves (grouped-query attention).
    fn per_query_head<const H: usize>(&self) -> Value<T, (B, Const<H>, S, X), D> {
        if HK == H {
            let s = self.shape();
            self.reshape_with_shape((s.0, Const::<H>, s.2, s.3))
        } else {
            self.index_select::<Axis<1>, u32, Const<H>>(&head_of::<D, H, HK>())
        }
    }
}
