//! Recurrent cells with PyTorch's equations and weight layouts, as methods of a step's input `(B, I)` on plain
//! and traced values (one composition, `#[layer]`): `lstm_cell` (gates i, f, g, o), `gru_cell` (gates r, z, n,
//! with `r` applied to `W_hn h + b_hn`) and `rnn_cell` (tanh or ReLU). Every kind's step equations are one
//! function, [`CellType`]'s step on the gates' pre-activations `(B, GATES, H)`, which the layers
//! ([`LSTM`](super::LSTM), [`GRU`](super::GRU), [`RNN`](super::RNN)) run too. The weights are PyTorch's `weight_ih` `(G, I)` and `weight_hh` `(G, H)`
//! with `G` the gates' rows, `4H` for the LSTM and `3H` for the GRU: stable Rust cannot write `4 * H` in a
//! type, so `G` is a parameter of its own, checked at build time.

use super::layer;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{BroadcastShapes, Const, ConstDim, Dim, MatMulShape, Shape};
use crate::tensor::IndexOp;

/// A recurrent cell's equations (PyTorch's `LSTM`, `GRU`, and `RNN` with `nonlinearity` tanh or relu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellType {
    /// Gates i, f, g, o: `c' = σ(f) c + σ(i) tanh(g)`, `h' = σ(o) tanh(c')`.
    Lstm,
    /// Gates r, z, n: `n = tanh(n_x + σ(r) n_h)`, `h' = (1 - σ(z)) n + σ(z) h`.
    Gru,
    /// One gate: `h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`.
    RnnTanh,
    /// One gate: `h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)`.
    RnnRelu,
}

impl CellType {
    /// The gates' count, the weights' rows over the hidden size.
    pub const fn gates(self) -> usize {
        match self {
            CellType::Lstm => 4,
            CellType::Gru => 3,
            CellType::RnnTanh | CellType::RnnRelu => 1,
        }
    }

    /// The op's name in messages.
    pub const fn name(self) -> &'static str {
        match self {
            CellType::Lstm => "lstm_cell",
            CellType::Gru => "gru_cell",
            CellType::RnnTanh | CellType::RnnRelu => "rnn_cell",
        }
    }
}

/// The build-time check that a cell's weights have `GATES · H` rows.
struct GateRows<const G: usize, const H: usize, const GATES: usize>;
impl<const G: usize, const H: usize, const GATES: usize> GateRows<G, H, GATES> {
    const OK: () = if G != GATES * H {
        size_check::concat_panic(&[&[
            t(match GATES {
                4 => "lstm_cell",
                3 => "gru_cell",
                _ => "rnn_cell",
            }),
            t(": the weights have "),
            n(G),
            t(" rows, "),
            n(GATES),
            t(" gates · hidden size "),
            n(H),
            t(" = "),
            n(GATES * H),
            t(" expected"),
        ]]);
    };
}

#[layer]
impl<T: FloatDType, B: Dim, const I: usize, D: Device> Value<T, (B, Const<I>), D> {
    /// One LSTM step (PyTorch's `LSTMCell`): with `gates = x W_ih^T + b_ih + h W_hh^T + b_hh` cut into i, f, g, o,
    /// `c' = σ(f) c + σ(i) tanh(g)` and `h' = σ(o) tanh(c')`; returns `(h', c')`. `G` must be `4 H` (a build
    /// error naming both otherwise); the biases are optional (PyTorch's `bias=False`).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<1, 2>, Cpu>::ones();
    /// let (h, c) = (Tensor::<f32, Rank2<1, 3>, Cpu>::zeros(), Tensor::<f32, Rank2<1, 3>, Cpu>::zeros());
    /// let (w_ih, w_hh) = (Tensor::<f32, Rank2<12, 2>, Cpu>::zeros(), Tensor::<f32, Rank2<12, 3>, Cpu>::zeros());
    /// let (h2, c2) = x.lstm_cell((&h, &c), &w_ih, &w_hh, None, None);
    /// // Zero weights: every gate 0, so c' = 0.5 c + 0.5 tanh(0) = 0 and h' = 0.5 tanh(0) = 0.
    /// assert_eq!((h2.to_array(), c2.to_array()), ([[0.; 3]], [[0.; 3]]));
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn lstm_cell<const H: usize, const G: usize>(
        &self,
        (h, c): (&Value<T, (B, Const<H>), D>, &Value<T, (B, Const<H>), D>),
        w_ih: &Value<T, (Const<G>, Const<I>), D>,
        w_hh: &Value<T, (Const<G>, Const<H>), D>,
        b_ih: Option<&Value<T, (Const<G>,), D>>,
        b_hh: Option<&Value<T, (Const<G>,), D>>,
    ) -> (Value<T, (B, Const<H>), D>, Value<T, (B, Const<H>), D>) {
        let () = GateRows::<G, H, 4>::OK;
        let (x, hidden) = (self.affine_gates(w_ih, b_ih), h.affine_gates(w_hh, b_hh));
        x.by_gate::<Const<4>, H>()
            .cell_step(hidden.by_gate(), h, c, CellType::Lstm)
    }

    /// One GRU step (PyTorch's `GRUCell`): with `x W_ih^T + b_ih` cut into `(r_x, z_x, n_x)` and `h W_hh^T + b_hh`
    /// into `(r_h, z_h, n_h)`, `r = σ(r_x + r_h)`, `z = σ(z_x + z_h)`, `n = tanh(n_x + r n_h)`, and
    /// `h' = (1 - z) n + z h`. `G` must be `3 H`.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<1, 2>, Cpu>::ones();
    /// let h = Tensor::<f32, Rank2<1, 3>, Cpu>::full(0.5);
    /// let (w_ih, w_hh) = (Tensor::<f32, Rank2<9, 2>, Cpu>::zeros(), Tensor::<f32, Rank2<9, 3>, Cpu>::zeros());
    /// // Zero weights: z = 0.5, n = 0, so h' = 0.5 h.
    /// assert_eq!(x.gru_cell(&h, &w_ih, &w_hh, None, None).to_array(), [[0.25; 3]]);
    /// ```
    pub fn gru_cell<const H: usize, const G: usize>(
        &self,
        h: &Value<T, (B, Const<H>), D>,
        w_ih: &Value<T, (Const<G>, Const<I>), D>,
        w_hh: &Value<T, (Const<G>, Const<H>), D>,
        b_ih: Option<&Value<T, (Const<G>,), D>>,
        b_hh: Option<&Value<T, (Const<G>,), D>>,
    ) -> Value<T, (B, Const<H>), D> {
        let () = GateRows::<G, H, 3>::OK;
        let (x, hidden) = (self.affine_gates(w_ih, b_ih), h.affine_gates(w_hh, b_hh));
        x.by_gate::<Const<3>, H>()
            .cell_step(hidden.by_gate(), h, h, CellType::Gru)
            .0
    }

    /// One Elman RNN step (PyTorch's `RNNCell`): `h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`, or with `relu`
    /// for [`CellType::RnnRelu`]; the weights `(H, I)` and `(H, H)`. `kind` must be one of the two RNN kinds (a
    /// panic names it otherwise).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::CellType;
    /// let x = Tensor::<f32, Rank2<1, 2>, Cpu>::from_array([[1., -1.]]);
    /// let h = Tensor::<f32, Rank2<1, 2>, Cpu>::zeros();
    /// let w_ih = Tensor::<f32, Rank2<2, 2>, Cpu>::from_array([[1., 0.], [0., 1.]]);
    /// let w_hh = Tensor::<f32, Rank2<2, 2>, Cpu>::zeros();
    /// assert_eq!(x.rnn_cell(&h, &w_ih, &w_hh, None, None, CellType::RnnRelu).to_array(), [[1., 0.]]);
    /// ```
    #[track_caller]
    pub fn rnn_cell<const H: usize>(
        &self,
        h: &Value<T, (B, Const<H>), D>,
        w_ih: &Value<T, (Const<H>, Const<I>), D>,
        w_hh: &Value<T, (Const<H>, Const<H>), D>,
        b_ih: Option<&Value<T, (Const<H>,), D>>,
        b_hh: Option<&Value<T, (Const<H>,), D>>,
        kind: CellType,
    ) -> Value<T, (B, Const<H>), D> {
        assert!(
            kind.gates() == 1,
            "rnn_cell: {kind:?} is not an RNN kind; use CellType::RnnTanh or CellType::RnnRelu"
        );
        let (x, hidden) = (self.affine_gates(w_ih, b_ih), h.affine_gates(w_hh, b_hh));
        x.by_gate::<Const<1>, H>()
            .cell_step(hidden.by_gate(), h, h, kind)
            .0
    }

    /// Gate pre-activations `(B, G·H)` as `(B, G, H)`, one row of `H` per gate (a view).
    fn by_gate<G: ConstDim, const H: usize>(self) -> Value<T, (B, G, Const<H>), D> {
        let b = self.shape().0;
        self.reshape_with_shape((b, G::default(), Const::<H>))
    }
}

#[layer]
impl<T: FloatDType, B: Dim, G: ConstDim, const H: usize, D: Device> Value<T, (B, G, Const<H>), D> {
    /// One step of `kind` from the input's gate pre-activations (`self`, `(B, G, H)`), the state's (`hidden`,
    /// `h W_hh^T + b_hh`), the state `h` and, for the LSTM, the cell state `c`: `(h', c')`, with `c' = h'` for
    /// the kinds without a cell state. `G` is the kind's gate count (its callers check it).
    #[allow(clippy::type_complexity)]
    pub(crate) fn cell_step(
        self,
        hidden: Self,
        h: &Value<T, (B, Const<H>), D>,
        c: &Value<T, (B, Const<H>), D>,
        kind: CellType,
    ) -> (Value<T, (B, Const<H>), D>, Value<T, (B, Const<H>), D>) {
        let gate = |v: &Self, k: usize| v.i((.., k));
        match kind {
            CellType::Lstm => {
                let gates = self + &hidden;
                let (i, f, g, o) = (
                    gate(&gates, 0),
                    gate(&gates, 1),
                    gate(&gates, 2),
                    gate(&gates, 3),
                );
                let c2 = f.sigmoid() * c + &(i.sigmoid() * &g.tanh());
                let h2 = o.sigmoid() * &c2.tanh();
                (h2, c2)
            }
            CellType::Gru => {
                let r = (gate(&self, 0) + &gate(&hidden, 0)).sigmoid();
                let z = (gate(&self, 1) + &gate(&hidden, 1)).sigmoid();
                let n = (gate(&self, 2) + &(r * &gate(&hidden, 2))).tanh();
                // (1 - z) n + z h, as n + z (h - n).
                let toward_h = z * &(h - &n);
                let h2 = n + &toward_h;
                (h2.clone(), h2)
            }
            CellType::RnnTanh | CellType::RnnRelu => {
                let pre = gate(&self, 0) + &gate(&hidden, 0);
                let h2 = if kind == CellType::RnnTanh {
                    pre.tanh()
                } else {
                    pre.relu()
                };
                (h2.clone(), h2)
            }
        }
    }
}

#[layer]
impl<T: FloatDType, B: Dim, const L: usize, const I: usize, D: Device>
    Value<T, (B, Const<L>, Const<I>), D>
{
    /// An LSTM layer's pass over a batch-first sequence `(B, L, I)` (PyTorch's `LSTM(I, H, batch_first=True)`,
    /// one layer, one direction): [`lstm_cell`](Self::lstm_cell) at each step from the state `(h0, c0)`, the
    /// input products of every step as one matmul. Returns every step's `h` `(B, L, H)` and the final `(h, c)`.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank3<2, 5, 3>, Cpu>::randn(0);
    /// let (h0, c0) = (Tensor::<f32, Rank2<2, 4>, Cpu>::zeros(), Tensor::<f32, Rank2<2, 4>, Cpu>::zeros());
    /// let (w_ih, w_hh) = (Tensor::<f32, Rank2<16, 3>, Cpu>::randn(1), Tensor::<f32, Rank2<16, 4>, Cpu>::randn(2));
    /// let (ys, (h, _c)) = x.lstm((&h0, &c0), &w_ih, &w_hh, None, None);
    /// assert_eq!(ys.i((.., 4)).to_vec(), h.to_vec()); // the last step's output is the final state
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn lstm<const H: usize, const G: usize>(
        &self,
        (h0, c0): (&Value<T, (B, Const<H>), D>, &Value<T, (B, Const<H>), D>),
        w_ih: &Value<T, (Const<G>, Const<I>), D>,
        w_hh: &Value<T, (Const<G>, Const<H>), D>,
        b_ih: Option<&Value<T, (Const<G>,), D>>,
        b_hh: Option<&Value<T, (Const<G>,), D>>,
    ) -> (
        Value<T, (B, Const<L>, Const<H>), D>,
        (Value<T, (B, Const<H>), D>, Value<T, (B, Const<H>), D>),
    ) {
        let () = GateRows::<G, H, 4>::OK;
        self.layer_pass::<Const<4>, H, G>((w_ih, w_hh), (b_ih, b_hh), (h0, c0), CellType::Lstm)
    }

    /// A GRU layer's pass over a batch-first sequence `(B, L, I)` (PyTorch's `GRU(I, H, batch_first=True)`, one
    /// layer, one direction) from the state `h0`: every step's `h` `(B, L, H)` and the final `h`.
    #[allow(clippy::type_complexity)]
    pub fn gru<const H: usize, const G: usize>(
        &self,
        h0: &Value<T, (B, Const<H>), D>,
        w_ih: &Value<T, (Const<G>, Const<I>), D>,
        w_hh: &Value<T, (Const<G>, Const<H>), D>,
        b_ih: Option<&Value<T, (Const<G>,), D>>,
        b_hh: Option<&Value<T, (Const<G>,), D>>,
    ) -> (
        Value<T, (B, Const<L>, Const<H>), D>,
        Value<T, (B, Const<H>), D>,
    ) {
        let () = GateRows::<G, H, 3>::OK;
        let (ys, (h, _)) =
            self.layer_pass::<Const<3>, H, G>((w_ih, w_hh), (b_ih, b_hh), (h0, h0), CellType::Gru);
        (ys, h)
    }

    /// One layer's pass in one direction with `GATES` gates of `H` (`G = GATES · H` rows, checked by the
    /// callers): the input products of every step as one matmul, then the recurrence the stacked layers run
    /// (`Recurrent`'s, fused on the `Cpu`).
    #[allow(clippy::type_complexity)]
    fn layer_pass<GATES: ConstDim, const H: usize, const G: usize>(
        &self,
        (w_ih, w_hh): (
            &Value<T, (Const<G>, Const<I>), D>,
            &Value<T, (Const<G>, Const<H>), D>,
        ),
        (b_ih, b_hh): (
            Option<&Value<T, (Const<G>,), D>>,
            Option<&Value<T, (Const<G>,), D>>,
        ),
        (h0, c0): (&Value<T, (B, Const<H>), D>, &Value<T, (B, Const<H>), D>),
        cell: CellType,
    ) -> (
        Value<T, (B, Const<L>, Const<H>), D>,
        (Value<T, (B, Const<H>), D>, Value<T, (B, Const<H>), D>),
    ) {
        let b = self.shape().0;
        let products = self.matmul(&w_ih.t()).reshape_with_shape((
            b,
            Const::<L>,
            GATES::default(),
            Const::<H>,
        ));
        let by_gate = |bias: &Value<T, (Const<G>,), D>| {
            bias.reshape_with_shape((GATES::default(), Const::<H>))
        };
        let (b_ih, b_hh) = (b_ih.map(by_gate), b_hh.map(by_gate));
        products.recur(
            (
                &w_hh.reshape_with_shape((G, Const::<H>)),
                b_ih.as_ref(),
                b_hh.as_ref(),
            ),
            (h0.clone(), c0.clone()),
            None,
            (false, cell, false),
        )
    }
}

#[layer]
impl<T: FloatDType, S: Shape, D: Device> Value<T, S, D> {
    /// `x W^T + b` over the last axis, the gates' pre-activations: of one step's input or state `(B, I)`, or of
    /// every step of a sequence `(B, L, I)` at once (one matmul).
    fn affine_gates<const I: usize, const G: usize>(
        &self,
        w: &Value<T, (Const<G>, Const<I>), D>,
        b: Option<&Value<T, (Const<G>,), D>>,
    ) -> Value<T, <S as MatMulShape<(Const<I>, Const<G>)>>::Output, D>
    where
        S: MatMulShape<(Const<I>, Const<G>)>,
        <S as MatMulShape<(Const<I>, Const<G>)>>::Output:
            BroadcastShapes<(Const<G>,), Output = <S as MatMulShape<(Const<I>, Const<G>)>>::Output>,
    {
        let y = self.matmul(&w.t());
        match b {
            Some(b) => y + b,
            None => y,
        }
    }
}
