//! Position encodings for sequence models: the sinusoidal table of "Attention Is All You Need" and rotary
//! embeddings in both of their layouts (LLaMA's rotate-half and the interleaved pairs of GPT-J and RoFormer).
//! Rotary is one composition for plain and traced values (`#[layer]`): `x cos + x[perm] sign sin`, where `perm`
//! pairs each element with its rotation partner and `sign` gives the partner's sign, so both layouts are the
//! same three ops with different tables.

use super::layer;
use crate::dtype::FloatDType;
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{BroadcastShapes, Const, Dim, FromEnd, HasAxis, Last, Shape};
use crate::tensor::{or_panic, Tensor};
use alloc::vec::Vec;

/// The sinusoidal position table `(L, E)`: `sin(p / 10000^(2i / E))` at column `2i` and the cosine at `2i + 1`
/// (the transformer paper's, and PyTorch tutorials' `PositionalEncoding`), computed in f64 and rounded to `T`.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::sinusoidal_positions;
/// let pe: Tensor<f64, Rank2<4, 6>, Cpu> = sinusoidal_positions();
/// let row = pe.to_array()[2];
/// assert_eq!(row[0], 2f64.sin());
/// assert_eq!(row[1], 2f64.cos());
/// assert!((row[4] - (2.0 / 10000f64.powf(4.0 / 6.0)).sin()).abs() < 1e-15);
/// ```
pub fn sinusoidal_positions<T: FloatDType, const L: usize, const E: usize, D: Device>(
) -> Tensor<T, (Const<L>, Const<E>), D> {
    sinusoidal_positions_with_shape((Const, Const))
}

/// [`sinusoidal_positions`] for a runtime length: `(len, E)`.
pub fn sinusoidal_positions_with_shape<T: FloatDType, L: Dim, const E: usize, D: Device>(
    shape: (L, Const<E>),
) -> Tensor<T, (L, Const<E>), D> {
    let len = shape.0.size();
    let values: Vec<T> = (0..len * E)
        .map(|k| {
            let (p, c) = ((k / E) as f64, k % E);
            let angle = p / 10000f64.powf((c - c % 2) as f64 / E as f64);
            T::from_f64(if c % 2 == 0 { angle.sin() } else { angle.cos() })
        })
        .collect();
    or_panic(Tensor::from_vec_with_shape(shape, values))
}

/// The tables of rotary position embeddings for heads of width `DH` (even) and positions `0..max_len`: each pair
/// of elements of a head is rotated by the angle `p θ_i`, `θ_i = base^(-2i / DH)`. Built in one of the two layouts
/// checkpoints use ([`Rotary::rotate_half`], [`Rotary::interleaved`]) and applied with
/// [`Tensor::rotary`](crate::Tensor::rotary) to queries and keys `(.., L, DH)`.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::Rotary;
/// let rope = Rotary::<f64, 2, Cpu>::interleaved(8, 10000.0);
/// let x = Tensor::<f64, Rank2<2, 2>, Cpu>::from_array([[1., 0.], [1., 0.]]);
/// let y = x.rotary(&rope, 0).to_array(); // positions 0 and 1: angles 0 and 1
/// assert_eq!(y[0], [1., 0.]);
/// assert!((y[1][0] - 1f64.cos()).abs() < 1e-15 && (y[1][1] - 1f64.sin()).abs() < 1e-15);
/// ```
pub struct Rotary<T: FloatDType, const DH: usize, D: Device> {
    /// `cos(p θ)` per position and element, `(max_len, DH)`.
    cos: Tensor<T, (usize, Const<DH>), D>,
    /// `sign · sin(p θ)`, the partner's share, `(max_len, DH)`.
    sin: Tensor<T, (usize, Const<DH>), D>,
    /// Each element's rotation partner.
    partner: Tensor<u32, (Const<DH>,), D>,
}

/// The build-time check of a rotary head width: even.
struct EvenWidth<const DH: usize>;
impl<const DH: usize> EvenWidth<DH> {
    const OK: () = if DH == 0 || DH % 2 != 0 {
        size_check::concat_panic(&[&[
            t("Rotary: the head width "),
            n(DH),
            t(" must be even, pairs of elements are rotated together"),
        ]]);
    };
}

impl<T: FloatDType, const DH: usize, D: Device> Rotary<T, DH, D> {
    /// LLaMA's layout (Hugging Face's `rotate_half`): element `i` pairs with `i + DH/2`, so the head's first half
    /// holds the pairs' first elements, `x cos + (-x2, x1) sin`.
    pub fn rotate_half(max_len: usize, base: f64) -> Self {
        let () = EvenWidth::<DH>::OK;
        let half = DH / 2;
        Self::build(
            max_len,
            base,
            |c| c % half,
            |c| {
                if c < half {
                    (c + half, -1.0)
                } else {
                    (c - half, 1.0)
                }
            },
        )
    }

    /// The interleaved layout (GPT-J, RoFormer, Meta's original LLaMA code): elements `2i` and `2i + 1` form a
    /// pair.
    pub fn interleaved(max_len: usize, base: f64) -> Self {
        let () = EvenWidth::<DH>::OK;
        Self::build(
            max_len,
            base,
            |c| c / 2,
            |c| {
                if c % 2 == 0 {
                    (c + 1, -1.0)
                } else {
                    (c - 1, 1.0)
                }
            },
        )
    }

    /// The tables from each element's frequency index `freq(c)` and its partner and sign `partner(c)`.
    fn build(
        max_len: usize,
        base: f64,
        freq: impl Fn(usize) -> usize,
        partner: impl Fn(usize) -> (usize, f64),
    ) -> Self {
        let angle = |k: usize| {
            let (p, c) = (k / DH, k % DH);
            p as f64 * base.powf(-2.0 * freq(c) as f64 / DH as f64)
        };
        let table = |f: &dyn Fn(usize) -> f64| -> Tensor<T, (usize, Const<DH>), D> {
            let values = (0..max_len * DH).map(|k| T::from_f64(f(k))).collect();
            or_panic(Tensor::from_vec_with_shape((max_len, Const), values))
        };
        let cos = table(&|k| angle(k).cos());
        let sin = table(&|k| partner(k % DH).1 * angle(k).sin());
        let partners = (0..DH).map(|c| partner(c).0 as u32).collect();
        Rotary {
            cos,
            sin,
            partner: or_panic(Tensor::from_vec(partners)),
        }
    }

    /// The longest sequence the tables cover.
    pub fn max_len(&self) -> usize {
        self.cos.dims()[0]
    }

    /// Rows `offset..offset + len` of a table, shaped as the input's position axis `L`; `Error::AxisTooShort`
    /// past the tables' end.
    fn rows<L: Dim>(
        table: &Tensor<T, (usize, Const<DH>), D>,
        offset: usize,
        len: L,
    ) -> Result<Tensor<T, (L, Const<DH>), D>> {
        let max = table.dims()[0];
        let end = offset.checked_add(len.size()).filter(|&end| end <= max);
        if end.is_none() {
            return Err(Error::AxisTooShort {
                op: "rotary",
                axis: 0,
                needed: offset.saturating_add(len.size()),
                size: max,
            });
        }
        let layout = table.layout().narrow("rotary", 0, offset, len.size())?;
        Ok(Tensor::from_view((len, Const), layout, table.storage()))
    }
}

#[layer]
impl<T: FloatDType, S: Shape, D: Device> Value<T, S, D> {
    /// Rotary position embedding of queries or keys `(.., L, DH)` at positions `offset..offset + L` (the
    /// offset is the cache's length in incremental decoding), in the layout `rope` was built with. Positions past
    /// the tables' length panic (see [`Self::try_rotary`]).
    #[track_caller]
    pub fn rotary<const DH: usize>(&self, rope: &Rotary<T, DH, D>, offset: usize) -> Self
    where
        S: HasAxis<Last, Dim = Const<DH>> + HasAxis<FromEnd<2>>,
        S: BroadcastShapes<(<S as HasAxis<FromEnd<2>>>::Dim, Const<DH>), Output = S>,
        S: BroadcastShapes<S, Output = S>,
    {
        or_panic(self.try_rotary(rope, offset))
    }

    /// [`Self::rotary`], returning `Error::AxisTooShort` when `offset + L` runs past the tables.
    pub fn try_rotary<const DH: usize>(
        &self,
        rope: &Rotary<T, DH, D>,
        offset: usize,
    ) -> Result<Self>
    where
        S: HasAxis<Last, Dim = Const<DH>> + HasAxis<FromEnd<2>>,
        S: BroadcastShapes<(<S as HasAxis<FromEnd<2>>>::Dim, Const<DH>), Output = S>,
        S: BroadcastShapes<S, Output = S>,
    {
        let len_index = <S as HasAxis<FromEnd<2>>>::INDEX;
        let len =
            <<S as HasAxis<FromEnd<2>>>::Dim as Dim>::from_size(self.shape().dims()[len_index])
                .expect("the axis's own size");
        let cos = Rotary::rows(&rope.cos, offset, len)?;
        let sin = Rotary::rows(&rope.sin, offset, len)?;
        // Each element's partner, in the input's own shape (the gather is dense, so the relabel is free).
        let partners = self
            .index_select::<Last, u32, Const<DH>>(&rope.partner)
            .reshape_with_shape(self.shape());
        Ok((self * &cos) + &(partners * &sin))
    }
}
