//! Traced values: a tensor plus its node in the graph of recorded ops.

use super::graph::{next_id, run_backward, BackwardFn, Gradients, Node};
use super::var::Var;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{HasAxis, Shape, MAX_RANK};
use crate::tensor::{Grad, Tensor};
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// A tensor whose ops are recorded for [`Traced::backward`].
///
/// Made by [`Var::trace`] (a parameter), [`Traced::constant`] (an input no gradient flows to) or an op on
/// other traced values. The ops mirror [`Tensor`]'s and return `Traced`; [`Traced::value`] is the plain
/// result.
pub struct Traced<T: FloatDType, S: Shape, D: Device> {
    pub(crate) value: Tensor<T, S, D>,
    pub(crate) node: Arc<Node>,
}

impl<T: FloatDType, S: Shape, D: Device> Clone for Traced<T, S, D> {
    /// Cheap: shares the value's buffer and the node.
    fn clone(&self) -> Self {
        Traced {
            value: self.value.clone(),
            node: self.node.clone(),
        }
    }
}

impl<T: FloatDType, S: Shape, D: Device> core::fmt::Debug for Traced<T, S, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Traced({:?})", self.value)
    }
}

/// Where an op's input sends its gradient: its node id, or nowhere for a constant.
#[derive(Clone, Copy)]
pub(crate) struct Slot(Option<usize>);

impl Slot {
    /// Nowhere: an optional input that is absent.
    pub(crate) fn none() -> Slot {
        Slot(None)
    }

    /// Whether a gradient is wanted here (compute it only then).
    pub(crate) fn wanted(self) -> bool {
        self.0.is_some()
    }

    /// Adds the gradient `grad()` (evaluated only if wanted).
    pub(crate) fn give<T: FloatDType, S: Shape, D: Device>(
        self,
        grads: &mut Gradients,
        grad: impl FnOnce() -> Tensor<T, S, D>,
    ) {
        if let Some(id) = self.0 {
            grads.accumulate(id, grad().padded());
        }
    }

    /// Adds the padded gradient `grad()` (evaluated only if wanted).
    pub(crate) fn give_padded_with<T: FloatDType, D: Device>(
        self,
        grads: &mut Gradients,
        grad: impl FnOnce() -> Grad<T, D>,
    ) {
        if let Some(id) = self.0 {
            grads.accumulate(id, grad());
        }
    }

    /// Adds `grad`, the gradient of entries `start..` of `axis` of a source whose padded dims are `full`, if
    /// wanted: kept as a piece and joined with the source's other pieces when its gradient is read (a split's
    /// parts, a sequence's steps), rather than embedded into a source-sized tensor now.
    pub(crate) fn give_part<T: FloatDType, D: Device>(
        self,
        grads: &mut Gradients,
        at: (crate::tensor::Padded, usize, usize),
        grad: Grad<T, D>,
    ) {
        if let Some(id) = self.0 {
            grads.accumulate_part(id, at, grad);
        }
    }

    /// Adds `grad`, already in the padded form, if wanted.
    pub(crate) fn give_padded<T: FloatDType, D: Device>(
        self,
        grads: &mut Gradients,
        grad: Grad<T, D>,
    ) {
        if let Some(id) = self.0 {
            grads.accumulate(id, grad);
        }
    }
}

/// A new op's id and its parents (the inputs gradients flow into), or `None` when no input needs a gradient and
/// nothing is recorded. Not generic, so the recording of every op and shape does not carry its own copy of this
/// loop (about 7% of a 49-layer model's IR when a typed recorder did).
fn op_parents(inputs: &[&Arc<Node>]) -> Option<(usize, Vec<Arc<Node>>)> {
    let parents: Vec<Arc<Node>> = inputs
        .iter()
        .filter(|n| n.requires_grad())
        .map(|&n| n.clone())
        .collect();
    (!parents.is_empty()).then(|| (next_id(), parents))
}

/// Records an op whose result is `value`, made from `inputs`, with a backward rule that names no shape: `rule`
/// receives the result's gradient and `captured` (the inputs' [`Slot`]s and saved values, in the padded form).
/// Only this small function is compiled once per result shape; the node ([`op_node`]), `rule`, a function pointer,
/// and the closure that calls it are compiled once per element type, device and captured type. When no input
/// needs a gradient nothing is recorded.
#[inline]
pub(crate) fn record_with<U: FloatDType, S2: Shape, D: Device, C: Send + 'static>(
    value: Tensor<U, S2, D>,
    inputs: &[&Arc<Node>],
    captured: C,
    rule: fn(Grad<U, D>, C, &mut Gradients),
) -> Traced<U, S2, D> {
    Traced::from_node(value, op_node(inputs, captured, rule))
}

/// [`record_with`]'s node: a new op node whose rule is `rule`, or a constant's when no input needs a gradient.
#[inline(never)]
fn op_node<U: FloatDType, D: Device, C: Send + 'static>(
    inputs: &[&Arc<Node>],
    captured: C,
    rule: fn(Grad<U, D>, C, &mut Gradients),
) -> Arc<Node> {
    match op_parents(inputs) {
        Some((id, parents)) => Node::op(id, parents, padded_rule(id, captured, rule)),
        None => Node::constant(),
    }
}

/// The boxed rule of [`record_with`]: takes node `id`'s gradient and runs `rule` on it.
fn padded_rule<U: FloatDType, D: Device, C: Send + 'static>(
    id: usize,
    captured: C,
    rule: fn(Grad<U, D>, C, &mut Gradients),
) -> BackwardFn {
    Box::new(move |grads: &mut Gradients| {
        if let Some(g) = grads.take::<U, D>(id) {
            rule(g, captured, grads);
        }
    })
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    pub(crate) fn from_node(value: Tensor<T, S, D>, node: Arc<Node>) -> Self {
        Traced { value, node }
    }

    /// A value no gradient flows to (a model input, a label).
    pub fn constant(value: Tensor<T, S, D>) -> Self
    where
        D: super::AutogradDevice,
    {
        Self::constant_of(value)
    }

    /// [`Self::constant`] for code generic over any device (traced ops, layers): checked at build time.
    pub(crate) fn constant_of(value: Tensor<T, S, D>) -> Self {
        const { super::assert_device::<D>() };
        Traced::from_node(value, Node::constant())
    }

    /// The tensor this value holds.
    pub fn value(&self) -> &Tensor<T, S, D> {
        &self.value
    }

    /// The value's shape (its tensor's).
    pub fn shape(&self) -> S {
        self.value.shape()
    }

    /// The tensor this value holds, leaving the graph.
    pub fn into_value(self) -> Tensor<T, S, D> {
        self.value
    }

    /// The same value as a constant: gradients stop here.
    pub fn detach(&self) -> Self {
        Traced::constant_of(self.value.clone())
    }

    /// True when gradients flow through this value (it depends on some [`Var`]).
    pub fn requires_grad(&self) -> bool {
        self.node.requires_grad()
    }

    /// Axis `Ax` of this value's padded form ([`Grad`]): where a padded backward rule finds it.
    pub(crate) fn padded_axis<Ax>(&self) -> usize
    where
        S: HasAxis<Ax>,
    {
        MAX_RANK - S::RANK + <S as HasAxis<Ax>>::INDEX
    }

    pub(crate) fn slot(&self) -> Slot {
        Slot(self.node.requires_grad().then_some(self.node.id))
    }

    /// Every element converted to `U`; the gradient converts back to `T`.
    pub fn to_dtype<U: FloatDType>(&self) -> Traced<U, S, D> {
        fn rule<T: FloatDType, U: FloatDType, D: Device>(
            g: Grad<U, D>,
            slot: Slot,
            store: &mut Gradients,
        ) {
            slot.give_padded(store, g.to_dtype::<T>());
        }
        record_with(
            self.value.to_dtype::<U>(),
            &[&self.node],
            self.slot(),
            rule::<T, U, D>,
        )
    }
}

impl<T: FloatDType, D: Device> Traced<T, (), D> {
    /// The gradients of this scalar with respect to every [`Var`] it depends on.
    ///
    /// Consumes the value: each op's backward rule runs once and frees what it kept, so parameters' buffers
    /// are free for in-place optimizer steps afterwards. Panics if it meets part of a graph that an earlier
    /// `backward()` already used (recompute the forward pass instead).
    pub fn backward(self) -> Gradients {
        let id = self.node.id;
        let wanted = self.node.requires_grad();
        let seed = Tensor::<T, (), D>::ones_with_shape(()).padded();
        let node = self.node;
        drop(self.value);
        run_backward(&node, move |grads| {
            if wanted {
                grads.accumulate(id, seed);
            }
        })
    }

    /// The scalar's value.
    pub fn to_scalar(&self) -> T {
        self.value.to_scalar()
    }
}

/// Anything an op on a [`Traced`] value accepts as another operand: a traced value, a parameter (traced
/// from its current value) or a plain tensor (a constant).
pub trait Traceable {
    /// The element type.
    type Elem: FloatDType;
    /// The shape.
    type Shape: Shape;
    /// The device.
    type Device: Device;
    /// This operand as a traced value.
    fn traced(&self) -> Traced<Self::Elem, Self::Shape, Self::Device>;
}

impl<T: FloatDType, S: Shape, D: Device> Traceable for Traced<T, S, D> {
    type Elem = T;
    type Shape = S;
    type Device = D;
    fn traced(&self) -> Traced<T, S, D> {
        self.clone()
    }
}

impl<T: FloatDType, S: Shape, D: Device> Traceable for Var<T, S, D> {
    type Elem = T;
    type Shape = S;
    type Device = D;
    fn traced(&self) -> Traced<T, S, D> {
        self.trace()
    }
}

impl<T: FloatDType, S: Shape, D: Device> Traceable for Tensor<T, S, D> {
    type Elem = T;
    type Shape = S;
    type Device = D;
    fn traced(&self) -> Traced<T, S, D> {
        Traced::constant_of(self.clone())
    }
}

impl<X: Traceable + ?Sized> Traceable for &X {
    type Elem = X::Elem;
    type Shape = X::Shape;
    type Device = X::Device;
    fn traced(&self) -> Traced<X::Elem, X::Shape, X::Device> {
        (**self).traced()
    }
}
