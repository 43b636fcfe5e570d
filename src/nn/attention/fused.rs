//! When [`scaled_dot_product_attention`](crate::Tensor::scaled_dot_product_attention) takes the fused path
//! (tiles.rs), and how a traced call records it: one op whose backward rule runs the fused gradient. The path
//! applies on `Cpu` to f32 values with or without a mask (a boolean one as the additive mask it means), causal or
//! not, and no dropout that drops;
//! everything else is the composed path, which stays the reference the fused one is tested against.

use super::tiles::{self, Added, Sizes};
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::device::Cpu;
use crate::dtype::{cast_slice, cast_slice_mut, DType, FloatDType};
use crate::ops::Device;
use crate::shape::{BroadcastTo, Const, Dim, Shape};
use crate::tensor::{Grad, Tensor};
use alloc::borrow::Cow;
use alloc::vec;
use alloc::vec::Vec;

/// Whether the fused path may apply to this element type and device (the sizes decide the rest, [`eligible`]).
pub(super) fn may_apply<T: FloatDType, D: Device>() -> bool {
    T::DTYPE == DType::F32 && D::NAME == <Cpu as crate::device::Kernels>::NAME
}

/// The sizes of a call that takes the fused path, or `None`: another device or element type, an empty axis (the
/// composed path handles those).
fn eligible<T: FloatDType, D: Device>(
    q: &[usize],
    k: &[usize],
    v: &[usize],
    (scale, causal): (f64, Option<usize>),
) -> Option<Sizes> {
    if !may_apply::<T, D>() {
        return None;
    }
    let z = Sizes {
        b: q[0],
        h: q[1],
        hk: k[1],
        l: q[2],
        s: k[2],
        e: q[3],
        ev: v[3],
        scale: scale as f32,
        causal,
    };
    let sizes = [z.b, z.h, z.hk, z.l, z.s, z.e, z.ev];
    let applies = sizes.iter().all(|&n| n > 0) && z.h % z.hk == 0;
    applies.then_some(z)
}

/// A tensor's elements as f32 (its type is f32: [`eligible`] checked): its own when dense in host memory, else
/// a copy.
fn f32s<T: FloatDType, S: Shape, D: Device>(x: &Tensor<T, S, D>) -> Cow<'_, [f32]> {
    match x.host_dense() {
        Some(elements) => Cow::Borrowed(cast_slice::<T, f32>(elements)),
        None => Cow::Owned(cast_slice::<T, f32>(&x.to_vec()).to_vec()),
    }
}

/// A fresh tensor of `shape` (zeros) and its elements as f32 to write, on the host (the fused path runs on the
/// `Cpu`: [`eligible`] checked); its buffer comes from and goes back to the Cpu's cache.
fn output<T: FloatDType, S: Shape, D: Device>(shape: S) -> Tensor<T, S, D> {
    match Tensor::host_output(shape, shape.dims().numel()) {
        Some(t) => t,
        None => unreachable!("the fused path runs on the host"),
    }
}

/// The elements of a tensor made by [`output`], as f32.
fn written<T: FloatDType, S: Shape, D: Device>(t: &mut Tensor<T, S, D>) -> &mut [f32] {
    match t.host_elements_mut() {
        Some(elements) => cast_slice_mut::<T, f32>(elements),
        None => unreachable!("a fresh host tensor is not shared"),
    }
}

/// What the fused backward rule keeps: the inputs, the additive mask (a view over the scores' shape), the output
/// and its rows' log-sum-exp, the sizes, and where the three gradients go.
struct Saved<T: FloatDType, QS: Shape, KS: Shape, VS: Shape, MS: Shape, OS: Shape, D: Device> {
    slots: [Slot; 3],
    q: Tensor<T, QS, D>,
    k: Tensor<T, KS, D>,
    v: Tensor<T, VS, D>,
    mask: Option<Tensor<T, MS, D>>,
    out: Tensor<T, OS, D>,
    lse: Vec<f32>,
    sizes: Sizes,
}

/// An additive mask over the scores, broadcast to them: its f32 elements in place and its view's strides (its
/// type is f32 on the `Cpu`: [`eligible`] checked).
fn added<T: FloatDType, S: Shape, D: Device>(mask: &Tensor<T, S, D>) -> Added<'_> {
    let Some(values) = D::host_slice(mask.buffer()) else {
        unreachable!("the fused path runs on the host")
    };
    let layout = mask.layout();
    let mut strides = [0; 4];
    strides.copy_from_slice(&layout.strides()[..4]);
    Added {
        values: cast_slice::<T, f32>(values),
        strides,
        offset: layout.offset(),
    }
}

/// The scores' shape of queries `q` over keys `k`.
type Scores<B, const H: usize, L, S> = (B, Const<H>, L, S);

impl<T: FloatDType, B: Dim, const H: usize, L: Dim, E: Dim, D: Device>
    Tensor<T, (B, Const<H>, L, E), D>
{
    /// These queries' attention over `key` and `value`, with an additive `mask` over the scores when given, by the
    /// fused path, when it applies.
    #[allow(clippy::type_complexity)]
    pub(super) fn fused_attention<const HK: usize, S: Dim, EV: Dim, M>(
        &self,
        key: &Tensor<T, (B, Const<HK>, S, E), D>,
        value: &Tensor<T, (B, Const<HK>, S, EV), D>,
        (scale, causal): (f64, Option<usize>),
        mask: Option<&Tensor<T, M, D>>,
    ) -> Option<Tensor<T, (B, Const<H>, L, EV), D>>
    where
        M: BroadcastTo<Scores<B, H, L, S>>,
    {
        let dims = (self.dims(), key.dims(), value.dims());
        let z = eligible::<T, D>(&dims.0, &dims.1, &dims.2, (scale, causal))?;
        let (b, _, l, _) = self.shape();
        let mask = mask.map(|m| m.broadcast_with_shape((b, Const::<H>, l, key.shape().2)));
        Some(forward(&z, (self, key, value), mask.as_ref()).0)
    }
}

/// The forward kernel: the output and its rows' log-sum-exp.
#[allow(clippy::type_complexity)]
fn forward<
    T: FloatDType,
    B: Dim,
    const H: usize,
    const HK: usize,
    L: Dim,
    S: Dim,
    E: Dim,
    EV: Dim,
    D: Device,
>(
    z: &Sizes,
    (q, k, v): (
        &Tensor<T, (B, Const<H>, L, E), D>,
        &Tensor<T, (B, Const<HK>, S, E), D>,
        &Tensor<T, (B, Const<HK>, S, EV), D>,
    ),
    mask: Option<&Tensor<T, Scores<B, H, L, S>, D>>,
) -> (Tensor<T, (B, Const<H>, L, EV), D>, Vec<f32>) {
    let (b, _, l, _) = q.shape();
    let mut out = output((b, Const::<H>, l, v.shape().3));
    let mut lse = vec![0f32; z.b * z.h * z.l];
    let (q, k, v) = (f32s(q), f32s(k), f32s(v));
    let mask = mask.map(added);
    tiles::forward(z, (&q, &k, &v), mask.as_ref(), written(&mut out), &mut lse);
    (out, lse)
}

impl<T: FloatDType, B: Dim, const H: usize, L: Dim, E: Dim, D: Device>
    Traced<T, (B, Const<H>, L, E), D>
{
    /// [`Tensor::fused_attention`] for traced values: one recorded op whose gradient is the fused backward pass
    /// (the mask is a plain tensor: it takes no gradient).
    #[allow(clippy::type_complexity)]
    pub(super) fn fused_attention<const HK: usize, S: Dim, EV: Dim, M>(
        &self,
        key: &Traced<T, (B, Const<HK>, S, E), D>,
        value: &Traced<T, (B, Const<HK>, S, EV), D>,
        (scale, causal): (f64, Option<usize>),
        mask: Option<&Tensor<T, M, D>>,
    ) -> Option<Traced<T, (B, Const<H>, L, EV), D>>
    where
        M: BroadcastTo<Scores<B, H, L, S>>,
    {
        let (qv, kv, vv) = (&self.value, &key.value, &value.value);
        let z = eligible::<T, D>(&qv.dims(), &kv.dims(), &vv.dims(), (scale, causal))?;
        let (b, _, l, _) = qv.shape();
        let mask = mask.map(|m| m.broadcast_with_shape((b, Const::<H>, l, kv.shape().2)));
        let (result, lse) = forward(&z, (qv, kv, vv), mask.as_ref());
        let saved = Saved {
            slots: [self.slot(), key.slot(), value.slot()],
            q: qv.clone(),
            k: kv.clone(),
            v: vv.clone(),
            mask,
            out: result.clone(),
            lse,
            sizes: z,
        };
        let nodes = [&self.node, &key.node, &value.node];
        Some(record_with(
            result,
            &nodes,
            saved,
            fused_rule::<T, D, _, _, _, _, _>,
        ))
    }
}

/// The fused attention's gradient: the backward kernel from the output's gradient `g`, each input's given only if
/// wanted.
fn fused_rule<T: FloatDType, D: Device, QS: Shape, KS: Shape, VS: Shape, MS: Shape, OS: Shape>(
    g: Grad<T, D>,
    saved: Saved<T, QS, KS, VS, MS, OS, D>,
    store: &mut Gradients,
) {
    if !saved.slots.iter().any(|s| s.wanted()) {
        return;
    }
    let (q, k, v) = (&saved.q, &saved.k, &saved.v);
    let mut dq = output::<T, _, D>(q.shape());
    let mut dk = output::<T, _, D>(k.shape());
    let mut dv = output::<T, _, D>(v.shape());
    let mask = saved.mask.as_ref().map(added);
    tiles::backward(
        &saved.sizes,
        (&f32s(q), &f32s(k), &f32s(v)),
        mask.as_ref(),
        (&f32s(&saved.out), &saved.lse, &f32s(&g)),
        (written(&mut dq), written(&mut dk), written(&mut dv)),
    );
    let [sq, sk, sv] = saved.slots;
    sq.give(store, || dq);
    sk.give(store, || dk);
    sv.give(store, || dv);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fused_path_applies_to_f32_on_the_cpu_without_empty_axes() {
        let q = [1, 2, 4, 8];
        assert!(eligible::<f32, Cpu>(&q, &q, &q, (0.3, None)).is_some());
        assert!(eligible::<f32, Cpu>(&q, &q, &q, (0.3, Some(0))).is_some());
        assert!(eligible::<f64, Cpu>(&q, &q, &q, (0.3, Some(0))).is_none());
        assert!(eligible::<f32, Cpu>(&[1, 2, 0, 8], &q, &q, (0.3, Some(0))).is_none());
        assert!(eligible::<f32, Cpu>(&q, &[1, 3, 4, 8], &q, (0.3, None)).is_none());
        // 3 kv heads, 2 query heads
    }
}
