//! When [`scaled_dot_product_attention`](crate::Tensor::scaled_dot_product_attention) takes the fused path
//! (tiles.rs), and how a traced call records it: one op whose backward rule runs the fused gradient. The path
//! applies on `Cpu` to f32 values with no mask but causal masking and no dropout; everything else is the
//! composed path, which stays the reference the fused one is tested against.

use super::tiles::{self, Sizes};
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::device::Cpu;
use crate::dtype::{cast_slice, cast_slice_mut, DType, FloatDType};
use crate::ops::Device;
use crate::shape::{Const, Dim, Shape};
use crate::tensor::{Grad, Tensor};
use alloc::vec;
use alloc::vec::Vec;

/// From this many bytes of one `(B, H, L, S)` f32 score tensor on, the fused path runs unmasked too: below it the
/// composed path is faster on the CPU (benches/README.md, "Sequence models").
const LARGE_SCORES: usize = 256 << 20;

/// Whether the automatic choice takes the fused path: causal (the masked half skipped), or scores of at least
/// [`LARGE_SCORES`].
fn worth_fusing(z: &Sizes) -> bool {
    let scores = [z.b, z.h, z.l, z.s, 4]
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d));
    z.causal.is_some() || scores.is_none_or(|bytes| bytes >= LARGE_SCORES)
}

/// The sizes of a call that takes the fused path, or `None`: another device or element type, an empty axis (the
/// composed path handles those), or, unless `forced`, sizes where the composed path is faster.
fn eligible<T: FloatDType, D: Device>(
    q: &[usize],
    k: &[usize],
    v: &[usize],
    (scale, causal): (f64, Option<usize>),
    forced: bool,
) -> Option<Sizes> {
    if T::DTYPE != DType::F32 || D::NAME != <Cpu as crate::device::Kernels>::NAME {
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
    (applies && (forced || worth_fusing(&z))).then_some(z)
}

/// A tensor's elements as f32 (its type is f32: [`eligible`] checked).
fn f32s<T: FloatDType, S: Shape, D: Device>(x: &Tensor<T, S, D>) -> Vec<f32> {
    cast_slice::<T, f32>(&x.to_vec()).to_vec()
}

/// f32 values as a tensor of `shape` of the element type `T` (f32).
fn tensor<T: FloatDType, S: Shape, D: Device>(shape: S, values: &[f32]) -> Tensor<T, S, D> {
    let mut data = vec![T::ZERO; values.len()];
    cast_slice_mut::<T, f32>(&mut data).copy_from_slice(values);
    crate::tensor::or_panic(Tensor::from_vec_with_shape(shape, data))
}

/// What the fused backward rule keeps: the inputs, the output and its rows' log-sum-exp, the sizes, and where
/// the three gradients go with the shapes they take.
struct Saved<QS, KS, VS> {
    slots: [Slot; 3],
    shapes: (QS, KS, VS),
    inputs: (Vec<f32>, Vec<f32>, Vec<f32>),
    out: Vec<f32>,
    lse: Vec<f32>,
    sizes: Sizes,
}

impl<T: FloatDType, B: Dim, const H: usize, L: Dim, E: Dim, D: Device>
    Tensor<T, (B, Const<H>, L, E), D>
{
    /// These queries' attention over `key` and `value` by the fused path, when it applies.
    #[allow(clippy::type_complexity)]
    pub(super) fn fused_attention<const HK: usize, S: Dim, EV: Dim>(
        &self,
        key: &Tensor<T, (B, Const<HK>, S, E), D>,
        value: &Tensor<T, (B, Const<HK>, S, EV), D>,
        scale: f64,
        causal: Option<usize>,
        forced: bool,
    ) -> Option<Tensor<T, (B, Const<H>, L, EV), D>> {
        let dims = (self.dims(), key.dims(), value.dims());
        let z = eligible::<T, D>(&dims.0, &dims.1, &dims.2, (scale, causal), forced)?;
        let (out, _) = forward(&z, (&f32s(self), &f32s(key), &f32s(value)));
        let (b, _, l, _) = self.shape();
        Some(tensor((b, Const::<H>, l, value.shape().3), &out))
    }
}

/// The forward kernel over f32 inputs: the output and its rows' log-sum-exp.
fn forward(z: &Sizes, (q, k, v): (&[f32], &[f32], &[f32])) -> (Vec<f32>, Vec<f32>) {
    let mut out = vec![0f32; z.b * z.h * z.l * z.ev];
    let mut lse = vec![0f32; z.b * z.h * z.l];
    tiles::forward(z, q, k, v, &mut out, &mut lse);
    (out, lse)
}

impl<T: FloatDType, B: Dim, const H: usize, L: Dim, E: Dim, D: Device>
    Traced<T, (B, Const<H>, L, E), D>
{
    /// [`Tensor::fused_attention`] for traced values: one recorded op whose gradient is the fused backward pass.
    #[allow(clippy::type_complexity)]
    pub(super) fn fused_attention<const HK: usize, S: Dim, EV: Dim>(
        &self,
        key: &Traced<T, (B, Const<HK>, S, E), D>,
        value: &Traced<T, (B, Const<HK>, S, EV), D>,
        scale: f64,
        causal: Option<usize>,
        forced: bool,
    ) -> Option<Traced<T, (B, Const<H>, L, EV), D>> {
        let (qv, kv, vv) = (&self.value, &key.value, &value.value);
        let z = eligible::<T, D>(&qv.dims(), &kv.dims(), &vv.dims(), (scale, causal), forced)?;
        let inputs = (f32s(qv), f32s(kv), f32s(vv));
        let (out, lse) = forward(&z, (&inputs.0, &inputs.1, &inputs.2));
        let (b, _, l, _) = qv.shape();
        let result = tensor((b, Const::<H>, l, vv.shape().3), &out);
        let saved = Saved {
            slots: [self.slot(), key.slot(), value.slot()],
            shapes: (qv.shape(), kv.shape(), vv.shape()),
            inputs,
            out,
            lse,
            sizes: z,
        };
        let nodes = [&self.node, &key.node, &value.node];
        Some(record_with(
            result,
            &nodes,
            saved,
            fused_rule::<T, D, _, _, _>,
        ))
    }
}

/// The fused attention's gradient: the backward kernel from the output's gradient `g`, each input's gradient
/// computed only if wanted.
fn fused_rule<T: FloatDType, D: Device, QS: Shape, KS: Shape, VS: Shape>(
    g: Grad<T, D>,
    saved: Saved<QS, KS, VS>,
    store: &mut Gradients,
) {
    if !saved.slots.iter().any(|s| s.wanted()) {
        return;
    }
    let dout = f32s(&g);
    let (q, k, v) = &saved.inputs;
    let (dq, dk, dv) = tiles::backward(&saved.sizes, (q, k, v), (&saved.out, &saved.lse, &dout));
    let [sq, sk, sv] = saved.slots;
    let (shq, shk, shv) = saved.shapes;
    sq.give(store, || tensor::<T, _, D>(shq, &dq));
    sk.give(store, || tensor::<T, _, D>(shk, &dk));
    sv.give(store, || tensor::<T, _, D>(shv, &dv));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(b: usize, h: usize, l: usize, s: usize, causal: Option<usize>) -> Sizes {
        Sizes {
            b,
            h,
            hk: h,
            l,
            s,
            e: 64,
            ev: 64,
            scale: 0.125,
            causal,
        }
    }

    #[test]
    fn the_fused_path_runs_when_causal_or_large() {
        assert!(worth_fusing(&sizes(8, 8, 512, 512, Some(0))));
        assert!(!worth_fusing(&sizes(8, 8, 512, 512, None))); // 64 MiB of scores
        assert!(worth_fusing(&sizes(16, 16, 512, 512, None))); // 256 MiB
        assert!(worth_fusing(&sizes(1, 1, 8192, 8192, None))); // 256 MiB
        assert!(worth_fusing(&sizes(usize::MAX, 2, 2, 2, None))); // past usize: large
        let q = [1, 1, 4, 8];
        assert!(eligible::<f32, Cpu>(&q, &q, &q, (0.3, None), false).is_none());
        assert!(eligible::<f32, Cpu>(&q, &q, &q, (0.3, None), true).is_some());
        assert!(eligible::<f64, Cpu>(&q, &q, &q, (0.3, Some(0)), true).is_none());
        assert!(eligible::<f32, Cpu>(&[1, 1, 0, 8], &q, &q, (0.3, Some(0)), true).is_none());
    }
}
