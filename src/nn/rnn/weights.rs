//! A recurrent layer's parameters: one layer's weights in one direction, PyTorch's initialisation, and the walk
//! that names them as PyTorch does with its file shapes.

use super::{Directions, Recurrent, RecurrentKind};
use crate::autograd::Var;
use crate::dtype::FloatDType;
use crate::nn::{BiasKind, ParamVisitor, Parameters};
use crate::ops::Device;
use crate::shape::{Const, ConstDim, Shape};
use crate::tensor::Tensor;
use alloc::format;

/// One layer's weights in one direction: `weight_ih` of shape `W` (`(G, H, I)` for the first layer, `(G, H,
/// DIRS, H)` above it), `weight_hh` `(G, H, H)`, biases `(G, H)`; stored in files as PyTorch's `(G·H, ..)`.
pub struct RecurrentWeights<
    T: FloatDType,
    W: Shape,
    G: ConstDim,
    const H: usize,
    D: Device,
    B: BiasKind,
> {
    /// The input-to-hidden weights, `(G, H, ..)`: PyTorch's `weight_ih_l{k}` `(G·H, input)`.
    pub weight_ih: Var<T, W, D>,
    /// The hidden-to-hidden weights, PyTorch's `weight_hh_l{k}` `(G·H, H)`.
    pub weight_hh: Var<T, (G, Const<H>, Const<H>), D>,
    /// PyTorch's `bias_ih_l{k}` `(G·H,)`, or `()`.
    pub bias_ih: B::Param<T, (G, Const<H>), D>,
    /// PyTorch's `bias_hh_l{k}` `(G·H,)`, or `()`.
    pub bias_hh: B::Param<T, (G, Const<H>), D>,
}

/// `(G, H, H)` weights, `(G, H)` biases, and input weights of shape `w_ih`, uniform in `±1/sqrt(H)` from `seed`
/// (PyTorch's initialisation), or zeros without one.
pub(super) fn weights<
    T: FloatDType,
    W: Shape,
    G: ConstDim,
    const H: usize,
    D: Device,
    B: BiasKind,
>(
    w_ih: W,
    seed: Option<u64>,
) -> RecurrentWeights<T, W, G, H, D, B> {
    let bias = (G::default(), Const::<H>);
    RecurrentWeights {
        weight_ih: Var::create(init::<T, _, D, H>(seed, 1, w_ih)),
        weight_hh: Var::create(init::<T, _, D, H>(seed, 2, (G::default(), Const, Const))),
        bias_ih: B::make(|| init::<T, _, D, H>(seed, 3, bias)),
        bias_hh: B::make(|| init::<T, _, D, H>(seed, 4, bias)),
    }
}

/// The `k`th parameter of a layer: uniform in `±1/sqrt(H)` from `seed`, or zeros.
fn init<T: FloatDType, S: Shape, D: Device, const H: usize>(
    seed: Option<u64>,
    k: u64,
    shape: S,
) -> Tensor<T, S, D> {
    let bound = 1.0 / (H as f64).sqrt();
    match seed {
        Some(seed) => {
            let seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(k);
            Tensor::uniform_with_shape(shape, -bound, bound, seed)
        }
        None => Tensor::zeros_with_shape(shape),
    }
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
    > Parameters for Recurrent<T, K, I, H, LAYERS, D, Dir, B>
{
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        self.dropout.visit_params(prefix, visitor); // its training flag
        for (d, w) in self.first.iter().enumerate() {
            w.visit(prefix, (0, d == 1), I, visitor);
        }
        for (k, layer) in self.upper.iter().enumerate() {
            for (d, w) in layer.iter().enumerate() {
                w.visit(prefix, (k + 1, d == 1), Dir::Count::SIZE * H, visitor);
            }
        }
    }
}

impl<T: FloatDType, W: Shape, G: ConstDim, const H: usize, D: Device, B: BiasKind>
    RecurrentWeights<T, W, G, H, D, B>
{
    /// Shows layer `layer`'s weights (the reverse direction's when `reverse`) under PyTorch's names and file
    /// shapes: `weight_ih_l{layer}` `(G·H, input)`, `weight_hh_l{layer}` `(G·H, H)`, the biases `(G·H,)`.
    fn visit<V: ParamVisitor>(
        &self,
        prefix: &str,
        (layer, reverse): (usize, bool),
        input: usize,
        visitor: &mut V,
    ) {
        let rows = G::SIZE * H;
        let suffix = if reverse { "_reverse" } else { "" };
        let name = |what: &str| crate::nn::join_name(prefix, &format!("{what}_l{layer}{suffix}"));
        visitor.visit_stored_as(&name("weight_ih"), &self.weight_ih, &[rows, input]);
        visitor.visit_stored_as(&name("weight_hh"), &self.weight_hh, &[rows, H]);
        if let Some(b) = B::var(&self.bias_ih) {
            visitor.visit_stored_as(&name("bias_ih"), b, &[rows]);
        }
        if let Some(b) = B::var(&self.bias_hh) {
            visitor.visit_stored_as(&name("bias_hh"), b, &[rows]);
        }
    }
}
