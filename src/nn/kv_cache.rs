//! A key/value cache for incremental decoding: the keys and values of the positions a decoder has seen, up to a
//! maximum length in the type, the current length at run time. Each step appends the new positions' keys and
//! values and attends over all of them (with [`Sdpa::causal_at`](super::Sdpa::causal_at) and the length before
//! the step when a step has several queries). Appending copies the cached positions once per step, as Hugging
//! Face's `DynamicCache` concatenates; giving it more than it holds is `Error::CacheFull`.

use crate::dtype::FloatDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::{Const, Dim};
use crate::tensor::{call, or_panic, written, Tensor};

/// The cached keys `(B, HK, len, E)` (or values, with `EV`).
pub type Cached<T, B, const HK: usize, const E: usize, D> =
    Tensor<T, (B, Const<HK>, usize, Const<E>), D>;

/// Keys `(B, HK, len, E)` and values `(B, HK, len, EV)` of up to `MAX` positions.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{KvCache, Sdpa};
/// let mut cache = KvCache::<f32, Const<1>, 2, 16, 4, 4, Cpu>::new();
/// let prompt = Tensor::<f32, Rank4<1, 2, 3, 4>, Cpu>::randn(0);
/// let (k, v) = cache.append(&prompt, &prompt); // 3 positions
/// let y = prompt.scaled_dot_product_attention(k, v, Sdpa::new().causal());
/// let next = Tensor::<f32, Rank4<1, 2, 1, 4>, Cpu>::randn(1);
/// let (k, v) = cache.append(&next, &next); // 4 positions
/// assert_eq!(k.dims().to_vec(), [1, 2, 4, 4]);
/// let step = next.scaled_dot_product_attention(k, v, Sdpa::new()); // the new query sees every position
/// # let _ = (y, step);
/// ```
pub struct KvCache<
    T: FloatDType,
    B: Dim,
    const HK: usize,
    const MAX: usize,
    const E: usize,
    const EV: usize,
    D: Device,
> {
    held: Option<KeysValues<T, B, HK, E, EV, D>>,
}

/// The cached keys and values.
type KeysValues<T, B, const HK: usize, const E: usize, const EV: usize, D> =
    (Cached<T, B, HK, E, D>, Cached<T, B, HK, EV, D>);

impl<
        T: FloatDType,
        B: Dim,
        const HK: usize,
        const MAX: usize,
        const E: usize,
        const EV: usize,
        D: Device,
    > Default for KvCache<T, B, HK, MAX, E, EV, D>
{
    fn default() -> Self {
        Self::new()
    }
}

impl<
        T: FloatDType,
        B: Dim,
        const HK: usize,
        const MAX: usize,
        const E: usize,
        const EV: usize,
        D: Device,
    > KvCache<T, B, HK, MAX, E, EV, D>
{
    /// An empty cache.
    pub fn new() -> Self {
        KvCache { held: None }
    }

    /// The positions it holds.
    pub fn len(&self) -> usize {
        self.held.as_ref().map_or(0, |(k, _)| k.dims()[2])
    }

    /// Whether it holds no position.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every position (a new sequence).
    pub fn clear(&mut self) {
        self.held = None;
    }

    /// Appends the keys `(B, HK, L, E)` and values `(B, HK, L, EV)` of `L` new positions and gives every
    /// position's. Panics with [`Self::try_append`]'s error.
    #[track_caller]
    #[allow(clippy::type_complexity)]
    pub fn append<L: Dim>(
        &mut self,
        keys: &Tensor<T, (B, Const<HK>, L, Const<E>), D>,
        values: &Tensor<T, (B, Const<HK>, L, Const<EV>), D>,
    ) -> (&Cached<T, B, HK, E, D>, &Cached<T, B, HK, EV, D>) {
        or_panic(self.try_append(keys, values))
    }

    /// [`Self::append`], returning `Error::CacheFull` when the positions would pass `MAX` (the cache unchanged)
    /// and `Error::ShapeMismatch` when the batch or the keys' and values' lengths disagree.
    #[allow(clippy::type_complexity)]
    pub fn try_append<L: Dim>(
        &mut self,
        keys: &Tensor<T, (B, Const<HK>, L, Const<E>), D>,
        values: &Tensor<T, (B, Const<HK>, L, Const<EV>), D>,
    ) -> Result<(&Cached<T, B, HK, E, D>, &Cached<T, B, HK, EV, D>)> {
        let (kd, vd) = (keys.dims(), values.dims());
        if kd[..3] != vd[..3] {
            return Err(Error::shape_mismatch("kv_cache", kd, vd));
        }
        let (len, adding) = (self.len(), kd[2]);
        if adding > MAX - len.min(MAX) {
            return Err(Error::CacheFull {
                op: "kv_cache",
                len,
                adding,
                max: MAX,
            });
        }
        let held = match self.held.take() {
            None => (appended(None, keys)?, appended(None, values)?),
            Some((k, v)) => {
                let joined =
                    appended(Some(&k), keys).and_then(|k2| Ok((k2, appended(Some(&v), values)?)));
                match joined {
                    Ok(both) => both,
                    Err(e) => {
                        self.held = Some((k, v)); // unchanged on error
                        return Err(e);
                    }
                }
            }
        };
        let (k, v) = self.held.insert(held);
        Ok((&*k, &*v))
    }
}

/// `old` (if any) then `new` along the positions' axis, 2, as one dense tensor of the total length.
fn appended<T: FloatDType, B: Dim, const HK: usize, const W: usize, L: Dim, D: Device>(
    old: Option<&Cached<T, B, HK, W, D>>,
    new: &Tensor<T, (B, Const<HK>, L, Const<W>), D>,
) -> Result<Cached<T, B, HK, W, D>> {
    let shape = new.shape();
    let mut len = shape.2.size();
    let new_layout = new.layout();
    let mut parts: [(&D::Buffer<T>, Layout); 2] = [(new.buffer(), new_layout); 2];
    let mut count = 1;
    if let Some(old) = old {
        if old.dims()[0] != shape.0.size() {
            return Err(Error::shape_mismatch("kv_cache", old.dims(), new.dims()));
        }
        len += old.dims()[2];
        parts = [(old.buffer(), old.layout()), (new.buffer(), new_layout)];
        count = 2;
    }
    let layouts: [Layout; 2] = [parts[0].1, parts[1].1];
    let views = [(parts[0].0, &layouts[0]), (parts[1].0, &layouts[1])];
    written!(
        Tensor::try_written_by,
        (shape.0, Const, len, Const),
        "kv_cache",
        call::concat::<T, D>(&views[..count], 2),
    )
}
