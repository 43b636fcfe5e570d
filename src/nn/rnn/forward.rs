//! A recurrent stack's passes over time: every step of one layer in one direction ([`recur`]), the directions
//! side by side, the layers in order, per-sample lengths as masks.

use super::{Directions, Recurrent, RecurrentKind, RnnArgs};
use crate::dtype::FloatDType;
use crate::nn::functional::FromConstant;
use crate::nn::recurrent::CellType;
use crate::nn::{layer, BiasKind, Module};
use crate::ops::{CmpOp, Device};
use crate::shape::{Axis, Const, ConstDim, Dim, Shape};
use crate::tensor::{IndexOp, Tensor};
use alloc::vec::Vec;

/// `Error::AxisTooShort` when a sample's length passes the sequence's `steps` (the op `name`, PyTorch's class).
pub(super) fn check_lengths<B: Dim, D: Device>(
    name: &'static str,
    lengths: &Tensor<u32, (B,), D>,
    steps: usize,
) -> crate::Result<()> {
    match lengths.to_vec().into_iter().max() {
        Some(longest) if longest as usize > steps => Err(crate::Error::AxisTooShort {
            op: name,
            axis: 1,
            needed: longest as usize,
            size: steps,
        }),
        _ => Ok(()),
    }
}

/// Per step, the samples it is padding for: `(B, H)` masks, non-zero past a sample's length (each a broadcast
/// view of a `(B, 1)` column).
fn padded_steps<B: Dim, const H: usize, D: Device>(
    lengths: &Tensor<u32, (B,), D>,
    steps: usize,
) -> Vec<Tensor<u8, (B, Const<H>), D>> {
    let b = lengths.shape().0;
    (0..steps)
        .map(|t| {
            lengths
                .compare_scalar(CmpOp::Le, t as u32)
                .reshape_with_shape((b, Const::<1>))
                .broadcast_with_shape((b, Const::<H>))
        })
        .collect()
}

#[layer]
impl<T: FloatDType, B: Dim, L: Dim, G: ConstDim, const H: usize, D: Device>
    Value<T, (B, L, G, Const<H>), D>
{
    /// One layer in one direction: from the input products of every step (`self`, `x W_ih^T`), the input bias
    /// `(G, H)`, the hidden-to-hidden weights `(G·H, H)` and bias `(G, H)`, and the initial `(h, c)`, runs `cell`
    /// over the steps (backwards when `reverse`), holding a sample's state past its length (`lengths`, checked by
    /// the caller). Returns every step's output `(B, L, H)`, in time order, and the final `(h, c)`. The fused path
    /// (fused.rs) where it applies and `composed` is false, else the cell's composed step at each step.
    #[allow(clippy::type_complexity)]
    pub(crate) fn recur(
        &self,
        (w_hh, b_ih, b_hh): (
            &Value<T, (usize, Const<H>), D>,
            Option<&Value<T, (G, Const<H>), D>>,
            Option<&Value<T, (G, Const<H>), D>>,
        ),
        (h0, c0): (Value<T, (B, Const<H>), D>, Value<T, (B, Const<H>), D>),
        lengths: Option<&Tensor<u32, (B,), D>>,
        (reverse, cell, composed): (bool, CellType, bool),
    ) -> (
        Value<T, (B, L, Const<H>), D>,
        (Value<T, (B, Const<H>), D>, Value<T, (B, Const<H>), D>),
    ) {
        if !composed
            && let Some(out) =
                self.fused_recur((w_hh, b_ih, b_hh), (&h0, &c0), lengths, (reverse, cell))
        {
            return out;
        }
        let gates = match b_ih {
            Some(bias) => self + bias,
            None => self.clone(),
        };
        let (b, l) = (self.shape().0, self.shape().1);
        let padded = lengths.map(|len| padded_steps(len, l.size()));
        let (mut h, mut c) = (h0, c0);
        // One piece per step: their gradients are joined once, not each embedded in the whole.
        let inputs = gates.unbind::<Axis<1>>();
        let mut steps: Vec<Value<T, (B, Const<H>), D>> = Vec::with_capacity(inputs.len());
        for step in 0..inputs.len() {
            let t = if reverse {
                inputs.len() - 1 - step
            } else {
                step
            };
            let x = &inputs[t];
            let hidden = h
                .matmul(&w_hh.t())
                .reshape_with_shape((b, G::default(), Const::<H>));
            let hidden = match b_hh {
                Some(bias) => hidden + bias,
                None => hidden,
            };
            let (h2, c2) = x.clone().cell_step(hidden, &h, &c, cell);
            match &padded {
                // Select, not blend: a padded step's values (NaN from padding included) never reach the state.
                Some(padded) => {
                    let (stopped, running) = (&padded[t], padded[t].logical_not());
                    h = h2.masked_fill(stopped, T::ZERO) + &h.masked_fill(&running, T::ZERO);
                    c = c2.masked_fill(stopped, T::ZERO) + &c.masked_fill(&running, T::ZERO);
                    steps.push(h2.masked_fill(stopped, T::ZERO));
                }
                None => {
                    (h, c) = (h2.clone(), c2);
                    steps.push(h2);
                }
            }
        }
        if reverse {
            steps.reverse();
        }
        if steps.is_empty() {
            // No steps: an empty output and the initial state.
            return (
                Value::from_constant(Tensor::zeros_with_shape((b, l, Const))),
                (h, c),
            );
        }
        let steps = Value::stack_slice::<Axis<1>>(&steps).reshape_with_shape((b, l, Const::<H>));
        (steps, (h, c))
    }
}

#[layer]
impl<T: FloatDType, S: Shape, D: Device> Value<T, S, D> {
    /// One direction's value or both, stacked along `Ax` and typed with the directions' dim (`shape`).
    fn stack_directions<Ax, S2: Shape>(parts: &[Self], shape: S2) -> Value<T, S2, D>
    where
        S: crate::shape::InsertAxis<Ax>,
    {
        match parts {
            [one] => Value::stack::<Ax, 1>(core::array::from_ref(one)).reshape_with_shape(shape),
            [forward, backward] => Value::stack::<Ax, 2>(&[forward.clone(), backward.clone()])
                .reshape_with_shape(shape),
            _ => unreachable!("one or two directions"),
        }
    }
}

#[layer]
impl<
        'a,
        T: FloatDType,
        K: RecurrentKind,
        const I: usize,
        const H: usize,
        const LAYERS: usize,
        D: Device,
        Dir: Directions,
        Bk: BiasKind,
        B: Dim,
        L: Dim,
    >
    Module<(
        Value<T, (B, L, Const<I>), D>,
        RnnArgs<'a, Value<T, (Const<LAYERS>, Dir::Count, B, Const<H>), D>, Tensor<u32, (B,), D>>,
    )> for Recurrent<T, K, I, H, LAYERS, D, Dir, Bk>
{
    #[allow(clippy::type_complexity)]
    type Output = (
        Value<T, (B, L, Dir::Count, Const<H>), D>,
        (
            Value<T, (Const<LAYERS>, Dir::Count, B, Const<H>), D>,
            Option<Value<T, (Const<LAYERS>, Dir::Count, B, Const<H>), D>>,
        ),
    );
    #[track_caller]
    #[allow(clippy::type_complexity)]
    fn forward(
        &self,
        (x, args): (
            Value<T, (B, L, Const<I>), D>,
            RnnArgs<
                'a,
                Value<T, (Const<LAYERS>, Dir::Count, B, Const<H>), D>,
                Tensor<u32, (B,), D>,
            >,
        ),
    ) -> Self::Output {
        let (b, l) = (x.shape().0, x.shape().1);
        let dirs = Dir::Count::default();
        let rows = K::Gates::SIZE * H;
        if let Some(lengths) = args.lengths {
            crate::tensor::or_panic(check_lengths(K::NAME, lengths, l.size()));
        }
        // Layer `layer`'s initial state in direction `d`: given, or zeros.
        let initial = |s: Option<&Value<T, _, D>>, layer: usize, d: usize| match s {
            Some(s) => s.i((layer, d)),
            None => Value::from_constant(Tensor::zeros_with_shape((b, Const::<H>))),
        };
        // Each layer's input as `(B, L, width)`, the width at run time (I, then DIRS·H).
        let mut input: Value<T, (B, L, usize), D> = x.reshape_with_shape((b, l, I));
        let mut output = None;
        let finals: [_; LAYERS] = core::array::from_fn(|layer| {
            let mut outputs = Vec::new();
            let (mut hs, mut cs) = (Vec::new(), Vec::new());
            for d in 0..dirs.size() {
                let (w_ih, w_hh, b_ih, b_hh) = if layer == 0 {
                    let w = &self.first[d];
                    let w_ih = Value::from(&w.weight_ih).reshape_with_shape((rows, I));
                    (w_ih, &w.weight_hh, Bk::var(&w.bias_ih), Bk::var(&w.bias_hh))
                } else {
                    let w = &self.upper[layer - 1][d];
                    let w_ih =
                        Value::from(&w.weight_ih).reshape_with_shape((rows, dirs.size() * H));
                    (w_ih, &w.weight_hh, Bk::var(&w.bias_ih), Bk::var(&w.bias_hh))
                };
                // The input products of every step: one matmul.
                let gates = input.matmul(&w_ih.t()).reshape_with_shape((
                    b,
                    l,
                    K::Gates::default(),
                    Const::<H>,
                ));
                let w_hh = Value::from(w_hh).reshape_with_shape((rows, Const::<H>));
                let (b_ih, b_hh) = (b_ih.map(Value::from), b_hh.map(Value::from));
                let state = (initial(args.h0, layer, d), initial(args.c0, layer, d));
                let (y, (h, c)) = gates.recur(
                    (&w_hh, b_ih.as_ref(), b_hh.as_ref()),
                    state,
                    args.lengths,
                    (d == 1, K::CELL, args.composed),
                );
                outputs.push(y);
                hs.push(h);
                cs.push(c);
            }
            let y = Value::stack_directions::<Axis<2>, _>(&outputs, (b, l, dirs, Const::<H>));
            let next = y.reshape_with_shape((b, l, dirs.size() * H));
            // Dropout between layers, as PyTorch's `dropout`.
            input = if layer + 1 < LAYERS {
                self.dropout.forward(next)
            } else {
                next
            };
            output = Some(y);
            let finals = |parts: &[Value<T, (B, Const<H>), D>]| {
                Value::stack_directions::<Axis<0>, _>(parts, (dirs, b, Const::<H>))
            };
            (finals(&hs), finals(&cs))
        });
        let h_n = Value::stack::<Axis<0>, LAYERS>(&finals.each_ref().map(|(h, _)| h.clone()));
        let c_n = (K::CELL == CellType::Lstm)
            .then(|| Value::stack::<Axis<0>, LAYERS>(&finals.map(|(_, c)| c)));
        let Some(output) = output else {
            unreachable!("at least one layer (checked when built)")
        };
        (output, (h_n, c_n))
    }
}

#[layer]
impl<
        T: FloatDType,
        K: RecurrentKind,
        const I: usize,
        const H: usize,
        const LAYERS: usize,
        D: Device,
        Dir: Directions,
        Bk: BiasKind,
        B: Dim,
        L: Dim,
    > Module<Value<T, (B, L, Const<I>), D>> for Recurrent<T, K, I, H, LAYERS, D, Dir, Bk>
{
    #[allow(clippy::type_complexity)]
    type Output = (
        Value<T, (B, L, Dir::Count, Const<H>), D>,
        (
            Value<T, (Const<LAYERS>, Dir::Count, B, Const<H>), D>,
            Option<Value<T, (Const<LAYERS>, Dir::Count, B, Const<H>), D>>,
        ),
    );
    #[track_caller]
    fn forward(&self, x: Value<T, (B, L, Const<I>), D>) -> Self::Output {
        self.run(x, RnnArgs::new())
    }
}
