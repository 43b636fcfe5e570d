//! Recurrent layers, PyTorch's `nn.LSTM`, `nn.GRU` and `nn.RNN` with `batch_first=True`: stacked layers (the
//! count in the type), one or both directions, initial states, per-sample lengths (PyTorch's packed sequences),
//! PyTorch's parameter names and file shapes. One generic [`Recurrent`] runs every kind through the cells' step
//! equations ([`CellType`]). weights.rs holds the parameters (names, shapes, initialisation), forward.rs the
//! passes over time, fused.rs and steps.rs the Cpu's fused recurrence.

mod forward;
mod fused;
mod steps;
mod weights;

pub use weights::RecurrentWeights;

use crate::dtype::FloatDType;
use crate::nn::recurrent::CellType;
use crate::nn::{BiasKind, Dropout, Module, WithBias};
use crate::ops::Device;
use crate::shape::size_check::{self, n, t};
use crate::shape::{Const, ConstDim, Dim};
use crate::tensor::Tensor;
use alloc::vec::Vec;
use core::marker::PhantomData;
use weights::weights;

/// A recurrent layer's kind: its step equations and gate count.
pub trait RecurrentKind: Send + Sync + 'static {
    /// The gates' count as a dim: `Const<4>` (LSTM), `Const<3>` (GRU), `Const<1>` (RNN).
    type Gates: ConstDim;
    /// The step equations.
    const CELL: CellType;
    /// PyTorch's class name, for messages.
    const NAME: &'static str;
}

/// PyTorch's `nn.LSTM` kind (a cell state beside `h`).
pub struct LstmKind;
/// PyTorch's `nn.GRU` kind.
pub struct GruKind;
/// PyTorch's `nn.RNN` kind with `nonlinearity="tanh"` (its default).
pub struct RnnTanhKind;
/// PyTorch's `nn.RNN` kind with `nonlinearity="relu"`.
pub struct RnnReluKind;

impl RecurrentKind for LstmKind {
    type Gates = Const<4>;
    const CELL: CellType = CellType::Lstm;
    const NAME: &'static str = "LSTM";
}
impl RecurrentKind for GruKind {
    type Gates = Const<3>;
    const CELL: CellType = CellType::Gru;
    const NAME: &'static str = "GRU";
}
impl RecurrentKind for RnnTanhKind {
    type Gates = Const<1>;
    const CELL: CellType = CellType::RnnTanh;
    const NAME: &'static str = "RNN";
}
impl RecurrentKind for RnnReluKind {
    type Gates = Const<1>;
    const CELL: CellType = CellType::RnnRelu;
    const NAME: &'static str = "RNN";
}

/// One direction ([`Forward`]) or both ([`Bidirectional`], PyTorch's `bidirectional=True`).
pub trait Directions: Send + Sync + 'static {
    /// The directions' count as a dim, an axis of the outputs and states.
    type Count: ConstDim;
}

/// Forward in time only (PyTorch's default).
pub struct Forward;
/// Forward and backward in time, the outputs side by side (PyTorch's `bidirectional=True`).
pub struct Bidirectional;

impl Directions for Forward {
    type Count = Const<1>;
}
impl Directions for Bidirectional {
    type Count = Const<2>;
}

/// The input weights of the first layer, `(G, H, I)`.
type FirstInput<G, const H: usize, const I: usize> = (G, Const<H>, Const<I>);
/// The input weights of the layers above, `(G, H, DIRS, H)`: they read both directions' outputs.
type UpperInput<G, C, const H: usize> = (G, Const<H>, C, Const<H>);
/// A layer above the first: its weights in each direction.
type UpperLayers<T, K, const H: usize, D, Dir, B> = Vec<UpperLayer<T, K, H, D, Dir, B>>;
/// The first layer's weights in one direction.
type FirstLayer<T, K, const I: usize, const H: usize, D, B> = RecurrentWeights<
    T,
    FirstInput<<K as RecurrentKind>::Gates, H, I>,
    <K as RecurrentKind>::Gates,
    H,
    D,
    B,
>;
/// The weights of a layer above the first in one direction.
type UpperLayer<T, K, const H: usize, D, Dir, B> = RecurrentWeights<
    T,
    UpperInput<<K as RecurrentKind>::Gates, <Dir as Directions>::Count, H>,
    <K as RecurrentKind>::Gates,
    H,
    D,
    B,
>;

/// A stack of `LAYERS` recurrent layers of kind `K` (PyTorch's `nn.LSTM(I, H, num_layers=LAYERS,
/// bidirectional=.., batch_first=True, bias=..)` and its siblings; use the aliases [`LSTM`], [`GRU`], [`RNN`]).
/// Inputs are batch-first sequences `(B, L, I)`; the outputs are every step's `h` of the last layer,
/// `(B, L, DIRS, H)` (PyTorch's `(B, L, DIRS·H)`: `.reshape()` to it where the numbers are known), and the final
/// states `(LAYERS, DIRS, B, H)` (PyTorch's `h_n` `(LAYERS·DIRS, B, H)`, the same order), with the LSTM's cell
/// states beside them. [`Self::run`] takes initial states and per-sample lengths ([`RnnArgs`]).
///
/// Parameters under PyTorch's names and file shapes: `weight_ih_l{k}`, `weight_hh_l{k}`, `bias_ih_l{k}`,
/// `bias_hh_l{k}`, with `_reverse` for the backward direction. The input products of every step are one matmul
/// per layer and direction; on the `Cpu` each layer's recurrence in each direction is then one fused op (a
/// product and one pass of the cell per step, [`RnnArgs::composed`] for the step-by-step composition). Dropout
/// between layers: [`Self::with_dropout`]. The sequence length `L` may be static or a runtime `usize`. Not here
/// yet: LSTM's `proj_size`.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Bidirectional, Module, LSTM};
/// // 2 layers of 8 over inputs of 4 features, both directions.
/// let lstm = LSTM::<f32, 4, 8, 2, Cpu, Bidirectional>::new(0);
/// let x = Tensor::<f32, Rank3<3, 5, 4>, Cpu>::randn(1);
/// let (y, (h, c)) = lstm.forward(x);
/// let y: Tensor<f32, Rank3<3, 5, 16>, Cpu> = y.reshape(); // PyTorch's (B, L, 2H)
/// assert_eq!(h.dims().to_vec(), [2, 2, 3, 8]); // (layers, directions, batch, hidden)
/// assert!(c.is_some());
/// ```
pub struct Recurrent<
    T: FloatDType,
    K: RecurrentKind,
    const I: usize,
    const H: usize,
    const LAYERS: usize,
    D: Device,
    Dir: Directions = Forward,
    B: BiasKind = WithBias,
> {
    /// The first layer's weights, one per direction.
    pub first: Vec<FirstLayer<T, K, I, H, D, B>>,
    /// The layers above it (`LAYERS - 1`), one set of weights per direction each.
    pub upper: Vec<UpperLayers<T, K, H, D, Dir, B>>,
    /// Dropout on every layer's output but the last's while training (PyTorch's `dropout`; 0 by default).
    pub dropout: Dropout,
    kind: PhantomData<(K, Dir)>,
}

/// PyTorch's `nn.LSTM`: [`Recurrent`] with LSTM cells (gates i, f, g, o).
pub type LSTM<
    T,
    const I: usize,
    const H: usize,
    const LAYERS: usize,
    D,
    Dir = Forward,
    B = WithBias,
> = Recurrent<T, LstmKind, I, H, LAYERS, D, Dir, B>;
/// PyTorch's `nn.GRU`: [`Recurrent`] with GRU cells (gates r, z, n).
pub type GRU<
    T,
    const I: usize,
    const H: usize,
    const LAYERS: usize,
    D,
    Dir = Forward,
    B = WithBias,
> = Recurrent<T, GruKind, I, H, LAYERS, D, Dir, B>;
/// PyTorch's `nn.RNN` (tanh): [`Recurrent`] with Elman cells; `Recurrent<T, RnnReluKind, ..>` for ReLU.
pub type RNN<
    T,
    const I: usize,
    const H: usize,
    const LAYERS: usize,
    D,
    Dir = Forward,
    B = WithBias,
> = Recurrent<T, RnnTanhKind, I, H, LAYERS, D, Dir, B>;

/// The build-time check that a stack has a layer.
struct HasLayers<K, const LAYERS: usize>(PhantomData<K>);
impl<K: RecurrentKind, const LAYERS: usize> HasLayers<K, LAYERS> {
    const OK: () = if LAYERS == 0 {
        size_check::concat_panic(&[&[
            t(K::NAME),
            t(": num_layers "),
            n(LAYERS),
            t(" is not at least 1"),
        ]]);
    };
}

impl<
        T: FloatDType,
        K: RecurrentKind,
        const I: usize,
        const H: usize,
        const LAYERS: usize,
        D: Device,
        Dir: Directions,
        B: BiasKind,
    > Recurrent<T, K, I, H, LAYERS, D, Dir, B>
{
    /// PyTorch's initialisation from `seed`: every weight and bias uniform in `±1/sqrt(H)`.
    pub fn new(seed: u64) -> Self {
        let () = HasLayers::<K, LAYERS>::OK;
        Self::made(Some(seed))
    }

    /// Every parameter zero: the layer to load a checkpoint into (`io::load`).
    pub fn zeros() -> Self {
        let () = HasLayers::<K, LAYERS>::OK;
        Self::made(None)
    }

    fn made(seed: Option<u64>) -> Self {
        let dirs = Dir::Count::SIZE;
        let seed_of =
            |layer: usize, dir: usize| seed.map(|s| s ^ ((layer * dirs + dir) as u64) << 32);
        Recurrent {
            first: (0..dirs)
                .map(|d| weights((K::Gates::default(), Const, Const), seed_of(0, d)))
                .collect(),
            upper: (1..LAYERS)
                .map(|k| {
                    (0..dirs)
                        .map(|d| {
                            let shape = (K::Gates::default(), Const, Dir::Count::default(), Const);
                            weights(shape, seed_of(k, d))
                        })
                        .collect()
                })
                .collect(),
            dropout: Dropout::new(0.0, seed.unwrap_or(0)),
            kind: PhantomData,
        }
    }

    /// This stack with dropout of probability `p` on every layer's output but the last's while training
    /// (PyTorch's `dropout` argument), masks from `seed`; traced values only, as [`Dropout`] does, and off in
    /// evaluation mode.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{Module, Parameters, GRU};
    /// let gru = GRU::<f32, 3, 4, 2, Cpu>::new(0).with_dropout(0.5, 1);
    /// let x = Tensor::<f32, Rank3<2, 5, 3>, Cpu>::randn(2);
    /// let (trained, _) = gru.forward(Traced::constant(x.clone()));
    /// let (inferred, _) = gru.forward(x.clone()); // plain tensors are never dropped
    /// assert_ne!(trained.value().to_vec(), inferred.to_vec());
    /// gru.eval();
    /// assert_eq!(gru.forward(Traced::constant(x)).0.value().to_vec(), inferred.to_vec());
    /// ```
    pub fn with_dropout(self, p: f64, seed: u64) -> Self {
        Recurrent {
            dropout: Dropout::new(p, seed),
            ..self
        }
    }

    /// The stack over `x` `(B, L, I)` with `args` (initial states, per-sample lengths): PyTorch's
    /// `forward(input, hx)` on a packed sequence, on plain tensors or traced values.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{RnnArgs, GRU};
    /// let gru = GRU::<f32, 2, 3, 1, Cpu>::new(0);
    /// let x = Tensor::<f32, Rank3<2, 4, 2>, Cpu>::randn(1);
    /// let lengths = Tensor::<u32, Rank1<2>, Cpu>::from_array([4, 2]); // the second sample has 2 steps
    /// let (y, (h, _)) = gru.run(x, RnnArgs::new().lengths(&lengths));
    /// assert_eq!(y.i((1, 3)).to_vec(), [0., 0., 0.]);        // padded steps give zeros
    /// assert_eq!(h.i((0, 0, 1)).to_vec(), y.i((1, 1, 0)).to_vec()); // the state is the last valid step's
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn run<'a, X, S0>(
        &self,
        x: X,
        args: RnnArgs<'a, S0, Tensor<u32, (<S0 as StateOf>::Batch,), D>>,
    ) -> <Self as Module<(
        X,
        RnnArgs<'a, S0, Tensor<u32, (<S0 as StateOf>::Batch,), D>>,
    )>>::Output
    where
        S0: StateOf,
        Self: Module<(
            X,
            RnnArgs<'a, S0, Tensor<u32, (<S0 as StateOf>::Batch,), D>>,
        )>,
    {
        self.forward((x, args))
    }

    /// [`Self::run`], returning `Error::AxisTooShort` when a sample's length passes the sequence (the op named as
    /// PyTorch's class, the longest length and the sequence's) rather than panicking.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{RnnArgs, LSTM};
    /// let lstm = LSTM::<f32, 2, 3, 1, Cpu>::new(0);
    /// let x = Tensor::<f32, Rank3<2, 4, 2>, Cpu>::zeros();
    /// let lengths = Tensor::<u32, Rank1<2>, Cpu>::from_array([4, 5]);
    /// let err = lstm.try_run(x, RnnArgs::new().lengths(&lengths)).unwrap_err();
    /// assert_eq!(err.to_string(), "LSTM: takes 5 elements along axis 1, which has 4");
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn try_run<'a, X, S0>(
        &self,
        x: X,
        args: RnnArgs<'a, S0, Tensor<u32, (<S0 as StateOf>::Batch,), D>>,
    ) -> crate::Result<
        <Self as Module<(
            X,
            RnnArgs<'a, S0, Tensor<u32, (<S0 as StateOf>::Batch,), D>>,
        )>>::Output,
    >
    where
        X: crate::nn::KeysOf,
        S0: StateOf,
        Self: Module<(
            X,
            RnnArgs<'a, S0, Tensor<u32, (<S0 as StateOf>::Batch,), D>>,
        )>,
    {
        if let Some(lengths) = args.lengths {
            forward::check_lengths(K::NAME, lengths, x.batch_and_len().1)?;
        }
        Ok(self.forward((x, args)))
    }
}

/// The batch dim of a state `(LAYERS, DIRS, B, H)`, plain or traced.
pub trait StateOf {
    /// `B`.
    type Batch: Dim;
}

impl<T: FloatDType, A: Dim, C: Dim, B: Dim, E: Dim, D: Device> StateOf
    for Tensor<T, (A, C, B, E), D>
{
    type Batch = B;
}

impl<T: FloatDType, A: Dim, C: Dim, B: Dim, E: Dim, D: Device> StateOf
    for crate::autograd::Traced<T, (A, C, B, E), D>
{
    type Batch = B;
}

/// The options of [`Recurrent::run`]: initial states `(LAYERS, DIRS, B, H)` (zeros when absent; the cell state
/// only for the LSTM) and per-sample lengths `(B,)` (`u32`): a sample's steps past its length leave its state
/// unchanged and give zero outputs, as PyTorch's packed sequences do (the backward direction starts at each
/// sample's last step). A length past the sequence panics naming the layer, the longest length and the
/// sequence's; [`Recurrent::try_run`] returns that as `Error::AxisTooShort`.
pub struct RnnArgs<'a, S0, Len> {
    h0: Option<&'a S0>,
    c0: Option<&'a S0>,
    lengths: Option<&'a Len>,
    composed: bool,
}

impl<S0, Len> Default for RnnArgs<'_, S0, Len> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a, S0, Len> RnnArgs<'a, S0, Len> {
    /// Zero initial states, every sample the whole sequence long.
    pub fn new() -> Self {
        RnnArgs {
            h0: None,
            c0: None,
            lengths: None,
            composed: false,
        }
    }

    /// The initial `h` of every layer and direction (PyTorch's `h_0`, reshaped `(LAYERS, DIRS, B, H)`).
    pub fn initial(self, h0: &'a S0) -> Self {
        RnnArgs {
            h0: Some(h0),
            ..self
        }
    }

    /// The LSTM's initial cell state (PyTorch's `c_0`); ignored by the other kinds.
    pub fn initial_cell(self, c0: &'a S0) -> Self {
        RnnArgs {
            c0: Some(c0),
            ..self
        }
    }

    /// Each sample's length `(B,)`, at most the sequence's.
    pub fn lengths(self, lengths: &'a Len) -> Self {
        RnnArgs {
            lengths: Some(lengths),
            ..self
        }
    }

    /// Runs the cells' composed step equations at every step (a graph node per op) instead of the fused
    /// recurrence the `Cpu` takes by default (one op per layer and direction, its gradient one pass back over
    /// the steps). Slower; the reference the fused path is tested against, and what other devices run.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{Module, RnnArgs, LSTM};
    /// let lstm = LSTM::<f64, 2, 3, 1, Cpu>::new(0);
    /// let x = Tensor::<f64, Rank3<2, 4, 2>, Cpu>::randn(1);
    /// let (fused, _) = lstm.forward(x.clone());
    /// let (composed, _) = lstm.run(x, RnnArgs::new().composed());
    /// let gap = (fused - composed).abs().max_all().to_scalar();
    /// assert!(gap < 1e-12);
    /// ```
    pub fn composed(self) -> Self {
        RnnArgs {
            composed: true,
            ..self
        }
    }
}
