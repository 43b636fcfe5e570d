//! When a recurrent layer's pass over time takes the fused path (steps.rs), and how a traced call records it: one
//! op for a layer's whole recurrence in one direction, whose backward rule is the fused gradient. It applies on
//! the `Cpu` to every float type and every cell kind; other devices, empty sizes and
//! [`RnnArgs::composed`](super::RnnArgs::composed) run the composed steps (forward.rs), which stay the reference
//! the fused path is tested against.
//!
//! The op's result is one time-major tensor `(L + 2, B, H)`: every step's `h`, then the final `h` and `c`; the
//! layer's three outputs are views of it, whose gradients are joined into its own (autograd/parts.rs).

use super::steps::{self, Inputs, Sizes, Tape};
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::device::{Cpu, Kernels};
use crate::dtype::FloatDType;
use crate::nn::recurrent::CellType;
use crate::ops::join::embed_rule;
use crate::ops::Device;
use crate::shape::{Axis, Const, Dim, Shape, MAX_RANK};
use crate::tensor::{or_panic, padded_shape, Grad, Tensor};
use alloc::borrow::Cow;
use alloc::vec::Vec;

/// A step's output `(B, H)`.
type State<T, B, const H: usize, D> = Tensor<T, (B, Const<H>), D>;
/// The fused op's result: every step's `h`, the final `h`, the final `c`, time-major `(L + 2, B, H)`.
type Whole<T, B, const H: usize, D> = Tensor<T, (usize, B, Const<H>), D>;

/// The sizes of a call that takes the fused path, or `None` (another device, an empty axis).
fn eligible<D: Device>(
    b: usize,
    l: usize,
    h: usize,
    cell: CellType,
    reverse: bool,
) -> Option<Sizes> {
    let applies = D::NAME == <Cpu as Kernels>::NAME && b > 0 && l > 0 && h > 0;
    applies.then_some(Sizes {
        b,
        l,
        h,
        cell,
        reverse,
    })
}

/// The layer's outputs as views of the op's result: every step's `h` `(L, B, H)` (time-major), the final `h` and `c`.
#[allow(clippy::type_complexity)]
fn views<T: FloatDType, B: Dim, L: Dim, const H: usize, D: Device>(
    whole: &Whole<T, B, H, D>,
    l: L,
) -> (
    Tensor<T, (L, B, Const<H>), D>,
    State<T, B, H, D>,
    State<T, B, H, D>,
) {
    let (layout, b) = (whole.layout(), whole.shape().1);
    let steps = or_panic(layout.narrow("recurrence", 0, 0, l.size()));
    let last = |at: usize| {
        let layout = or_panic(layout.select("recurrence", 0, at));
        Tensor::from_view((b, Const::<H>), layout, whole.storage())
    };
    (
        Tensor::from_view((l, b, Const::<H>), steps, whole.storage()),
        last(l.size()),
        last(l.size() + 1),
    )
}

/// What the fused backward rule keeps: where the five gradients go and their shapes, the weights, the lengths and
/// the forward pass's tape.
struct Saved<T, GS, WS, BS, HS> {
    /// Input products, `W_hh`, `b_ih`, `b_hh`, `h0`, `c0`.
    slots: [Slot; 6],
    shapes: (GS, WS, Option<BS>, HS),
    w_hh: Vec<T>,
    lengths: Option<Vec<u32>>,
    tape: Tape<T>,
    sizes: Sizes,
}

/// A tensor's elements on the host: its own when dense in host memory, else a copy.
fn host<T: FloatDType, S: Shape, D: Device>(x: &Tensor<T, S, D>) -> Cow<'_, [T]> {
    match x.host_dense() {
        Some(elements) => Cow::Borrowed(elements),
        None => Cow::Owned(x.to_vec()),
    }
}

/// The host inputs of one call.
struct Host<'a, T: Clone> {
    gates: Cow<'a, [T]>,
    w_hh: Cow<'a, [T]>,
    b_ih: Option<Cow<'a, [T]>>,
    b_hh: Option<Cow<'a, [T]>>,
    h0: Cow<'a, [T]>,
    c0: Cow<'a, [T]>,
    lengths: Option<Vec<u32>>,
}

/// A layer's tensors for one recurrence: the input products, `(W_hh, b_ih, b_hh)`, the initial `(h, c)`.
type Operands<'a, T, B, L, G, const H: usize, D> = (
    &'a Tensor<T, (B, L, G, Const<H>), D>,
    (
        &'a Tensor<T, (usize, Const<H>), D>,
        Option<&'a Tensor<T, (G, Const<H>), D>>,
        Option<&'a Tensor<T, (G, Const<H>), D>>,
    ),
    (&'a State<T, B, H, D>, &'a State<T, B, H, D>),
);

impl<'a, T: FloatDType> Host<'a, T> {
    /// The operands' elements on the host (each borrowed where dense), the lengths copied.
    fn of<B: Dim, L: Dim, G: Dim, const H: usize, D: Device>(
        (gates, (w_hh, b_ih, b_hh), (h0, c0)): Operands<'a, T, B, L, G, H, D>,
        lengths: Option<&Tensor<u32, (B,), D>>,
    ) -> Self {
        Host {
            gates: host(gates),
            w_hh: host(w_hh),
            b_ih: b_ih.map(host),
            b_hh: b_hh.map(host),
            h0: host(h0),
            c0: host(c0),
            lengths: lengths.map(Tensor::to_vec),
        }
    }

    fn inputs(&self) -> Inputs<'_, T> {
        Inputs {
            gates: &self.gates,
            w_hh: &self.w_hh,
            b_ih: self.b_ih.as_deref(),
            b_hh: self.b_hh.as_deref(),
            h0: &self.h0,
            c0: &self.c0,
            lengths: self.lengths.as_deref(),
        }
    }
}

/// Runs the fused forward pass on `host` into a fresh `(L + 2, B, H)` tensor (time-major), inside rayon's pool
/// so that each step's join wakes no thread from outside it; the tape when `keep`.
#[allow(clippy::type_complexity)]
fn run<T: FloatDType, B: Dim, const H: usize, D: Device>(
    z: &Sizes,
    host: &Host<'_, T>,
    b: B,
    keep: bool,
) -> Option<(Whole<T, B, H, D>, Option<Tape<T>>)> {
    let mut whole = Tensor::host_output((z.l + 2, b, Const), (z.l + 2) * z.b * H)?;
    let out = whole.host_elements_mut()?;
    let tape = rayon::scope(|_| steps::forward(z, &host.inputs(), out, keep));
    Some((whole, tape))
}

impl<T: FloatDType, B: Dim, L: Dim, G: Dim, const H: usize, D: Device>
    Tensor<T, (B, L, G, Const<H>), D>
{
    /// One layer's recurrence in one direction by the fused path, when it applies: from these input products
    /// `x W_ih^T` `(B, L, G, H)`, `b_ih`, `W_hh` `(G·H, H)`, `b_hh`, the initial state and the lengths, every
    /// step's `h` and the final `(h, c)`, as the composed steps give them (forward.rs).
    #[allow(clippy::type_complexity)]
    pub(super) fn fused_recur(
        &self,
        (w_hh, b_ih, b_hh): (
            &Tensor<T, (usize, Const<H>), D>,
            Option<&Tensor<T, (G, Const<H>), D>>,
            Option<&Tensor<T, (G, Const<H>), D>>,
        ),
        (h0, c0): (&State<T, B, H, D>, &State<T, B, H, D>),
        lengths: Option<&Tensor<u32, (B,), D>>,
        (reverse, cell): (bool, CellType),
    ) -> Option<(
        Tensor<T, (B, L, Const<H>), D>,
        (State<T, B, H, D>, State<T, B, H, D>),
    )> {
        let (b, l) = (self.shape().0, self.shape().1);
        let z = eligible::<D>(b.size(), l.size(), H, cell, reverse)?;
        let host = Host::of((self, (w_hh, b_ih, b_hh), (h0, c0)), lengths);
        let (whole, _) = run::<T, B, H, D>(&z, &host, b, false)?;
        let (ys, h, c) = views::<T, B, L, H, D>(&whole, l);
        Some((ys.transpose::<Axis<0>, Axis<1>>(), (h, c)))
    }
}

impl<T: FloatDType, B: Dim, L: Dim, G: Dim, const H: usize, D: Device>
    Traced<T, (B, L, G, Const<H>), D>
{
    /// [`Tensor::fused_recur`] for traced values: one recorded op whose gradient is the fused backward pass.
    #[allow(clippy::type_complexity)]
    pub(super) fn fused_recur(
        &self,
        (w_hh, b_ih, b_hh): (
            &Traced<T, (usize, Const<H>), D>,
            Option<&Traced<T, (G, Const<H>), D>>,
            Option<&Traced<T, (G, Const<H>), D>>,
        ),
        (h0, c0): (&Traced<T, (B, Const<H>), D>, &Traced<T, (B, Const<H>), D>),
        lengths: Option<&Tensor<u32, (B,), D>>,
        (reverse, cell): (bool, CellType),
    ) -> Option<(
        Traced<T, (B, L, Const<H>), D>,
        (Traced<T, (B, Const<H>), D>, Traced<T, (B, Const<H>), D>),
    )> {
        let (b, l) = (self.value.shape().0, self.value.shape().1);
        let z = eligible::<D>(b.size(), l.size(), H, cell, reverse)?;
        let biases = (b_ih.map(|b| &b.value), b_hh.map(|b| &b.value));
        let weights = (&w_hh.value, biases.0, biases.1);
        let host = Host::of((&self.value, weights, (&h0.value, &c0.value)), lengths);
        let (whole, tape) = run::<T, B, H, D>(&z, &host, b, true)?;
        let (ys, h, c) = views::<T, B, L, H, D>(&whole, l);
        let no_bias = Slot::none();
        let saved = Saved {
            slots: [
                self.slot(),
                w_hh.slot(),
                b_ih.map_or(no_bias, Traced::slot),
                b_hh.map_or(no_bias, Traced::slot),
                h0.slot(),
                c0.slot(),
            ],
            shapes: (
                self.value.shape(),
                w_hh.value.shape(),
                b_ih.or(b_hh).map(|b| b.value.shape()),
                h0.value.shape(),
            ),
            w_hh: host.w_hh.into_owned(),
            lengths: host.lengths,
            tape: tape.expect("kept"),
            sizes: z,
        };
        let mut nodes = alloc::vec![&self.node, &w_hh.node, &h0.node, &c0.node];
        nodes.extend([b_ih, b_hh].into_iter().flatten().map(|b| &b.node));
        let whole_dims = padded_shape(&whole.dims());
        let whole = record_with(whole, &nodes, saved, recurrence_rule::<T, D, _, _, _, _>);
        // Each view's gradient is a part of the whole's, along its padded first axis.
        let axis = MAX_RANK - 3;
        let part = |start: usize| (whole.slot(), whole_dims, axis, start);
        let ys = record_with(ys, &[&whole.node], part(0), embed_rule::<T, D>);
        let h = record_with(h, &[&whole.node], part(l.size()), embed_rule::<T, D>);
        let c = record_with(c, &[&whole.node], part(l.size() + 1), embed_rule::<T, D>);
        Some((ys.transpose::<Axis<0>, Axis<1>>(), (h, c)))
    }
}

/// The fused recurrence's gradient from its result's, `g`: each input's computed only if wanted.
fn recurrence_rule<T: FloatDType, D: Device, GS: Shape, WS: Shape, BS: Shape, HS: Shape>(
    g: Grad<T, D>,
    saved: Saved<T, GS, WS, BS, HS>,
    store: &mut Gradients,
) {
    if !saved.slots.iter().any(|s| s.wanted()) {
        return;
    }
    let (z, lengths) = (saved.sizes, saved.lengths.as_deref());
    let [gates, w_hh, b_ih, b_hh, h0, c0] = saved.slots;
    let (gs, ws, bs, hs) = saved.shapes;
    let host_output = Tensor::<T, GS, D>::host_output(gs, gs.dims().numel());
    let Some(mut dgates) = host_output else {
        unreachable!("the fused path runs on the host (checked when recorded)")
    };
    let grads = {
        let dout = host(&g);
        let Some(dgates) = dgates.host_elements_mut() else {
            unreachable!("a fresh host tensor is not shared")
        };
        let args = ((&saved.w_hh[..], lengths), &saved.tape, &dout[..]);
        rayon::scope(|_| steps::backward(&z, args.0, args.1, args.2, dgates))
    };
    saved.tape.recycle();
    gates.give(store, || dgates);
    w_hh.give(store, || tensor::<T, _, D>(ws, grads.w_hh));
    if let Some(bs) = bs {
        b_ih.give(store, || tensor::<T, _, D>(bs, grads.b_ih));
        b_hh.give(store, || tensor::<T, _, D>(bs, grads.b_hh));
    }
    h0.give(store, || tensor::<T, _, D>(hs, grads.h0));
    if saved.sizes.cell == CellType::Lstm {
        c0.give(store, || tensor::<T, _, D>(hs, grads.c0));
    }
}

/// Host values as a tensor of `shape` (their count is the shape's).
fn tensor<T: FloatDType, S: Shape, D: Device>(shape: S, data: Vec<T>) -> Tensor<T, S, D> {
    or_panic(Tensor::from_vec_with_shape(shape, data))
}
