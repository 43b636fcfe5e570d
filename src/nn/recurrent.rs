//! Recurrent cells with PyTorch's equations and weight layouts, as methods of a step's input `(B, I)` on plain
//! and traced values (one composition, `#[layer]`): `lstm_cell` (gates i, f, g, o) and `gru_cell` (gates r, z, n,
//! with `r` applied to `W_hn h + b_hn`). The weights are PyTorch's `weight_ih` `(G, I)` and `weight_hh` `(G, H)`
//! with `G` the gates' rows, `4H` for the LSTM and `3H` for the GRU: stable Rust cannot write `4 * H` in a
//! type, so `G` is a parameter of its own, checked at build time.

use super::layer;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{Axis, BroadcastShapes, Const, Dim, MatMulShape, Shape};
use crate::tensor::IndexOp;

/// The build-time check that a cell's weights have `GATES · H` rows.
struct GateRows<const G: usize, const H: usize, const GATES: usize>;
impl<const G: usize, const H: usize, const GATES: usize> GateRows<G, H, GATES> {
    const OK: () = if G != GATES * H {
        size_check::concat_panic(&[&[
            t(if GATES == 4 { "lstm_cell" } else { "gru_cell" }),
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
        let gates = self.affine_gates(w_ih, b_ih) + &h.affine_gates(w_hh, b_hh);
        gates.lstm_gates(c)
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
        self.affine_gates(w_ih, b_ih)
            .gru_gates(h.affine_gates(w_hh, b_hh), h)
    }

    /// An LSTM step from its gates' pre-activations `self` `(B, 4H)` and the cell state: `(h', c')`.
    #[allow(clippy::type_complexity)]
    fn lstm_gates<const H: usize>(
        self,
        c: &Value<T, (B, Const<H>), D>,
    ) -> (Value<T, (B, Const<H>), D>, Value<T, (B, Const<H>), D>) {
        // Split without split's own check, which would repeat the caller's in its words.
        let [i, f, g, o] = self.split_unchecked::<Axis<1>, H, 4>();
        let c2 = f.sigmoid() * c + &(i.sigmoid() * &g.tanh());
        let h2 = o.sigmoid() * &c2.tanh();
        (h2, c2)
    }

    /// A GRU step from the input's gate pre-activations `self` `(B, 3H)`, the state's `hidden`, and the state.
    fn gru_gates<const H: usize>(
        self,
        hidden: Value<T, (B, Const<I>), D>,
        h: &Value<T, (B, Const<H>), D>,
    ) -> Value<T, (B, Const<H>), D> {
        let [r_x, z_x, n_x] = self.split_unchecked::<Axis<1>, H, 3>();
        let [r_h, z_h, n_h] = hidden.split_unchecked::<Axis<1>, H, 3>();
        let r = (r_x + &r_h).sigmoid();
        let z = (z_x + &z_h).sigmoid();
        let n = (n_x + &(r * &n_h)).tanh();
        // (1 - z) n + z h, as n + z (h - n).
        let toward_h = z * &(h - &n);
        n + &toward_h
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
        let inputs = self.affine_gates(w_ih, b_ih);
        let (mut h, mut c) = (h0.clone(), c0.clone());
        let steps: [Value<T, (B, Const<H>), D>; L] = core::array::from_fn(|t| {
            let gates = inputs.i((.., t)) + &h.affine_gates(w_hh, b_hh);
            let (h2, c2) = gates.lstm_gates(&c);
            (h, c) = (h2.clone(), c2);
            h2
        });
        (Value::stack::<Axis<1>, L>(&steps), (h, c))
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
        let inputs = self.affine_gates(w_ih, b_ih);
        let mut h = h0.clone();
        let steps: [Value<T, (B, Const<H>), D>; L] = core::array::from_fn(|t| {
            let h2 = inputs.i((.., t)).gru_gates(h.affine_gates(w_hh, b_hh), &h);
            h = h2.clone();
            h2
        });
        (Value::stack::<Axis<1>, L>(&steps), h)
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
