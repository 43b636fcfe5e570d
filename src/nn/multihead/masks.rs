//! The masks of [`MultiheadAttention`](super::MultiheadAttention) with PyTorch's meanings ([`MhaMasks`]), the
//! sequences' batch and length dims they are typed by ([`KeysOf`]), and their sum as one additive mask over the
//! heads' scores.

use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{Const, Dim};
use crate::tensor::Tensor;

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

/// The masks and options of [`MultiheadAttention::attend`](super::MultiheadAttention::attend), PyTorch's keyword
/// arguments: a `key_padding_mask` `(B, S)` and an `attn_mask` `(L, S)` or per head `(B·HEADS, L, S)`, each boolean
/// (non-zero **ignores** the key: the meaning PyTorch's `nn.MultiheadAttention` gives, the opposite of
/// `F.scaled_dot_product_attention`'s) or additive; causal masking; and whether to return the attention weights. `K`
/// is the keys' type, `(B, S, E)`, from which the masks' shapes follow.
///
/// A query left with no key (every key padding, or blocked) gets an output of the out-projection's bias alone
/// (zero attention weights), as [`scaled_dot_product_attention`](crate::Tensor::scaled_dot_product_attention)
/// gives zeros, as PyTorch's `F.scaled_dot_product_attention` does; PyTorch 2.5.1's `nn.MultiheadAttention` gives
/// NaN there, with or without weights (checked): a padded batch entry's NaN would reach the loss.
pub struct MhaMasks<'a, T: FloatDType, K: KeysOf, D: Device> {
    key_padding: Option<KeyMask<'a, T, BatchByKeys<K>, D>>,
    attn: Option<KeyMask<'a, T, (usize, K::Len), D>>,
    attn_per_head: Option<KeyMask<'a, T, RowsByKeys<K>, D>>,
    pub(super) causal: bool,
    pub(super) need_weights: bool,
}

/// The shape `(B·HEADS, L, S)` of a per-head attention mask for keys `K`.
type RowsByKeys<K> = (usize, usize, <K as KeysOf>::Len);

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
            attn_per_head: None,
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

    /// `(L, S)`: non-zero where query `l` may not attend to key `s`, in every sample and head (PyTorch's boolean 2-D
    /// `attn_mask`; its `(B·HEADS, L, S)` form is [`Self::attn_mask_per_head`]). `L` is a runtime dim here; a mask of
    /// other length than the queries' panics naming the mask, the axis and both sizes
    /// ([`MultiheadAttention::try_attend`](super::MultiheadAttention::try_attend): the same as an `Err`).
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

    /// `(B·HEADS, L, S)`: non-zero where query `l` of head `h` in sample `b` (row `b·HEADS + h`) may not attend to
    /// key `s` (PyTorch's boolean 3-D `attn_mask`). `B·HEADS` and `L` are runtime dims here; other sizes panic
    /// naming the mask ([`MultiheadAttention::try_attend`](super::MultiheadAttention::try_attend): an `Err`). It
    /// replaces a per-head mask given before (boolean or additive); an `(L, S)` mask applies beside it.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{MhaMasks, MultiheadAttention};
    /// let attn = MultiheadAttention::<f32, 4, 2, 2, Cpu>::new(0);
    /// let x = Tensor::<f32, Rank3<1, 2, 4>, Cpu>::randn(1);
    /// // Head 0 of the one sample may not see key 1; head 1 sees every key.
    /// let mask = Tensor::<u8, (usize, usize, Const<2>), Cpu>::from_vec_with_shape(
    ///     (2, 2, Const), vec![0, 1, 0, 1, 0, 0, 0, 0]).unwrap();
    /// let masks = MhaMasks::new().attn_mask_per_head(&mask).need_weights();
    /// let (_, w) = attn.attend(x.clone(), x.clone(), x, masks);
    /// let w = w.unwrap(); // (1, 2, 2, 2)
    /// assert_eq!((w.i((0, 0, 0, 1)).to_scalar(), w.i((0, 0, 0, 0)).to_scalar()), (0.0, 1.0));
    /// assert!(w.i((0, 1, 0, 1)).to_scalar() > 0.0);
    /// ```
    pub fn attn_mask_per_head(self, mask: &'a Tensor<u8, (usize, usize, K::Len), D>) -> Self {
        MhaMasks {
            attn_per_head: Some(KeyMask::Blocked(mask)),
            ..self
        }
    }

    /// `(B·HEADS, L, S)`: added to each head's scores (PyTorch's float 3-D `attn_mask`).
    pub fn additive_attn_mask_per_head(
        self,
        mask: &'a Tensor<T, (usize, usize, K::Len), D>,
    ) -> Self {
        MhaMasks {
            attn_per_head: Some(KeyMask::Add(mask)),
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

/// A `(B, HD, L, S)` mask over the heads' scores: `HD` is 1 (every head alike) or the head count.
type OverHeads<T, B, HD, L, S, D> = Tensor<T, (B, HD, L, S), D>;

impl<T: FloatDType, K: KeysOf, D: Device> MhaMasks<'_, T, K, D> {
    /// `Error::AxisSize` naming the mask whose runtime-sized dims differ from the batch `b` (times the `heads`
    /// for a per-head mask), the queries' length `l` or the keys' length `s`.
    pub(crate) fn check(
        &self,
        (b, heads): (usize, usize),
        l: usize,
        s: usize,
    ) -> crate::Result<()> {
        if let Some(mask) = &self.key_padding {
            mask.check("MultiheadAttention key_padding_mask", &[b, s])?;
        }
        if let Some(mask) = &self.attn {
            mask.check("MultiheadAttention attn_mask", &[l, s])?;
        }
        if let Some(mask) = &self.attn_per_head {
            let rows = b.saturating_mul(heads);
            mask.check("MultiheadAttention attn_mask", &[rows, l, s])?;
        }
        Ok(())
    }

    /// The `try_` forms' check of an attention of `queries` over `keys`: `Error::AxisSize` naming `what` when the
    /// keys' batch is not the queries', else [`Self::check`] with the queries' batch and length and the keys'
    /// length (`heads` counts a per-head mask's rows).
    pub(crate) fn check_for<X: KeysOf>(
        &self,
        what: &'static str,
        heads: usize,
        queries: &X,
        keys: &K,
    ) -> crate::Result<()> {
        let ((b, l), (kb, s)) = (queries.batch_and_len(), keys.batch_and_len());
        if kb != b {
            return Err(crate::Error::AxisSize {
                op: what,
                axis: 0,
                expected: b,
                found: kb,
            });
        }
        self.check((b, heads), l, s)
    }

    /// Whether a mask differs between heads (the additive mask then covers every head's scores).
    pub(super) fn per_head(&self) -> bool {
        self.attn_per_head.is_some()
    }
}

/// The masks of `masks` for `(B, HEADS, L, S)` scores as one additive mask of `shape` (`-inf` where blocked), or
/// `None` when there is none: `(B, 1, L, S)` when every head's is the same, `(B, HEADS, L, S)` when a mask is per
/// head (the caller passes `HD` accordingly, [`MhaMasks::per_head`]). Panics naming a mask of the wrong runtime
/// size (`heads` is the head count).
#[track_caller]
pub(super) fn additive<T, B, HD, L, S, D, K>(
    masks: &MhaMasks<'_, T, K, D>,
    shape: (B, HD, L, S),
    heads: usize,
) -> Option<OverHeads<T, B, HD, L, S, D>>
where
    T: FloatDType,
    (B, HD, L, S): crate::shape::Shape,
    B: Dim,
    HD: Dim,
    L: Dim,
    S: Dim,
    D: Device,
    K: KeysOf<Batch = B, Len = S>,
{
    let (b, hd, l, s) = shape;
    crate::tensor::or_panic(masks.check((b.size(), heads), l.size(), s.size()));
    let mut blocked: Option<OverHeads<u8, B, HD, L, S, D>> = None;
    let mut added: Option<OverHeads<T, B, HD, L, S, D>> = None;
    let mut add = |mask: KeyMaskOf<T, B, HD, L, S, D>| match mask {
        KeyMaskOf::Blocked(m) => {
            blocked = Some(match blocked.take() {
                Some(old) => old.logical_or(&m),
                None => m,
            })
        }
        KeyMaskOf::Add(m) => {
            added = Some(match added.take() {
                Some(old) => old + &m,
                None => m,
            })
        }
    };
    if let Some(mask) = &masks.key_padding {
        add(mask.stretched((b, Const::<1>, Const::<1>, s), shape));
    }
    if let Some(mask) = &masks.attn {
        add(mask.stretched((Const::<1>, Const::<1>, l, s), shape));
    }
    if let Some(mask) = &masks.attn_per_head {
        add(mask.stretched((b, hd, l, s), shape));
    }
    match (blocked, added) {
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

/// A key mask stretched over the scores' `(B, HD, L, S)`.
enum KeyMaskOf<T: FloatDType, B: Dim, HD: Dim, L: Dim, S: Dim, D: Device> {
    Blocked(OverHeads<u8, B, HD, L, S, D>),
    Add(OverHeads<T, B, HD, L, S, D>),
}

impl<T: FloatDType, M: crate::shape::Shape, D: Device> KeyMask<'_, T, M, D> {
    /// `Error::AxisSize` naming the mask (`op`) unless its dims are `expected` (runtime dims can differ;
    /// static ones are checked by the types).
    fn check(&self, op: &'static str, expected: &[usize]) -> crate::Result<()> {
        let dims = match self {
            KeyMask::Blocked(m) => m.dims(),
            KeyMask::Add(m) => m.dims(),
        };
        for (axis, &size) in expected.iter().enumerate() {
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

    /// This mask as `view` (its elements with size-1 axes where it does not vary: a reshape), stretched over the
    /// scores' `shape`.
    fn stretched<V, B: Dim, HD: Dim, L: Dim, S: Dim>(
        &self,
        view: V,
        shape: (B, HD, L, S),
    ) -> KeyMaskOf<T, B, HD, L, S, D>
    where
        V: crate::shape::Shape + crate::shape::BroadcastTo<(B, HD, L, S)>,
    {
        match self {
            KeyMask::Blocked(m) => {
                KeyMaskOf::Blocked(m.reshape_with_shape(view).broadcast_with_shape(shape))
            }
            KeyMask::Add(m) => {
                KeyMaskOf::Add(m.reshape_with_shape(view).broadcast_with_shape(shape))
            }
        }
    }
}
