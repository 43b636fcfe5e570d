//! The graph of recorded ops, the reverse walk, and the gradient store.

use super::var::Var;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::{Grad, Tensor};
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// A fresh node (or `Var`) identity.
pub(crate) fn next_id() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What a node is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// A value no gradient flows to.
    Constant,
    /// A parameter's value; its id is the `Var`'s, so every trace of one `Var` shares its gradient.
    Leaf,
    /// The result of a recorded op.
    Op,
}

/// An op's backward rule: reads its output's gradient from the store, adds its inputs' gradients.
pub(crate) type BackwardFn = Box<dyn FnOnce(&mut Gradients) + Send>;

/// What an op node keeps until `backward` runs it.
struct Edges {
    parents: Vec<Arc<Node>>,
    backward: BackwardFn,
}

/// One value in the graph.
pub(crate) struct Node {
    pub(crate) id: usize,
    pub(crate) kind: Kind,
    /// `None` for constants and leaves, and for op nodes whose rule has run.
    edges: Mutex<Option<Edges>>,
}

impl Node {
    pub(crate) fn constant() -> Arc<Node> {
        Arc::new(Node {
            id: next_id(),
            kind: Kind::Constant,
            edges: Mutex::new(None),
        })
    }

    pub(crate) fn leaf(id: usize) -> Arc<Node> {
        Arc::new(Node {
            id,
            kind: Kind::Leaf,
            edges: Mutex::new(None),
        })
    }

    pub(crate) fn op(id: usize, parents: Vec<Arc<Node>>, backward: BackwardFn) -> Arc<Node> {
        Arc::new(Node {
            id,
            kind: Kind::Op,
            edges: Mutex::new(Some(Edges { parents, backward })),
        })
    }

    /// Whether gradients flow into this node.
    pub(crate) fn requires_grad(&self) -> bool {
        self.kind != Kind::Constant
    }

    fn edges(&self) -> std::sync::MutexGuard<'_, Option<Edges>> {
        self.edges.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Node {
    /// Frees the graph above this node without recursion: a chain of a million ops (an RNN-style loop that is
    /// never back-propagated) would otherwise drop node by node on the call stack and overflow it. Parents this
    /// node held the last handle on are taken apart here, their own parents queued, and so on; a parent still
    /// held elsewhere just loses one count.
    fn drop(&mut self) {
        let Some(edges) = self
            .edges
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let mut pending = edges.parents;
        drop(edges.backward);
        while let Some(parent) = pending.pop() {
            if let Some(mut node) = Arc::into_inner(parent)
                && let Some(edges) = node
                    .edges
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
            {
                pending.extend(edges.parents);
            }
            // A `node` taken above has dropped with the `if`, its edges already taken: no recursion.
        }
    }
}

/// Runs every backward rule reachable from `root`, whose gradient is `seed`, in reverse topological order.
pub(crate) fn run_backward(root: &Arc<Node>, seed: impl FnOnce(&mut Gradients)) -> Gradients {
    // Iterative post-order DFS (long chains of ops must not overflow the stack).
    let mut order: Vec<Arc<Node>> = Vec::new();
    let mut seen: HashSet<usize> = HashSet::new();
    let mut stack: Vec<(Arc<Node>, bool)> = alloc::vec![(root.clone(), false)];
    while let Some((node, children_done)) = stack.pop() {
        if children_done {
            order.push(node);
            continue;
        }
        if node.kind != Kind::Op || !seen.insert(node.id) {
            continue;
        }
        let parents: Vec<Arc<Node>> = match node.edges().as_ref() {
            Some(edges) => edges.parents.clone(),
            None => panic!(
                "typed-tensor: backward() reached a value whose graph an earlier backward() already used; \
                 recompute the forward pass"
            ),
        };
        stack.push((node, true));
        for p in parents.into_iter().rev() {
            if p.kind == Kind::Op {
                stack.push((p, false));
            }
        }
    }
    let mut grads = Gradients::default();
    seed(&mut grads);
    for node in order.iter().rev() {
        let edges = node.edges().take();
        if let Some(Edges { parents, backward }) = edges {
            backward(&mut grads);
            drop(parents);
        }
    }
    grads.settle();
    grads
}

/// Gradients from one `backward()`: one tensor per parameter ([`Var`]) that the loss depends on.
#[derive(Default)]
pub struct Gradients {
    pub(super) by_id: HashMap<usize, Box<dyn Any + Send + Sync>>,
    /// Gradients still in pieces, joined when read (parts.rs).
    pub(super) parts: HashMap<usize, Box<dyn super::parts::PendingParts>>,
}

impl core::fmt::Debug for Gradients {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Gradients({} tensors)", self.by_id.len())
    }
}

impl Gradients {
    /// The gradient of the loss with respect to `var`, with `var`'s exact type; zeros when the loss does not
    /// depend on it.
    pub fn get<T: FloatDType, S: Shape, D: Device>(&self, var: &Var<T, S, D>) -> Tensor<T, S, D> {
        self.try_get(var)
            .unwrap_or_else(|| Tensor::zeros_with_shape(var.shape()))
    }

    /// The gradient of the loss with respect to `var`, or `None` when the loss does not depend on it.
    pub fn try_get<T: FloatDType, S: Shape, D: Device>(
        &self,
        var: &Var<T, S, D>,
    ) -> Option<Tensor<T, S, D>> {
        self.peek::<T, D>(var.id()).map(|g| g.unpadded(var.shape()))
    }

    /// Node `id`'s gradient in its padded form, borrowed.
    pub(crate) fn peek<T: FloatDType, D: Device>(&self, id: usize) -> Option<&Grad<T, D>> {
        self.by_id.get(&id).map(|g| {
            g.downcast_ref::<Grad<T, D>>().expect(
                "typed-tensor internal error: a gradient has another element type or device",
            )
        })
    }

    /// How many parameters received a gradient.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// True when no parameter received a gradient.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Adds `grad` to node `id`'s gradient (in place when the stored one is not shared). Gradients are kept in
    /// their padded form, so this is compiled once per element type and device, whatever the shapes.
    pub(crate) fn accumulate<T: FloatDType, D: Device>(&mut self, id: usize, grad: Grad<T, D>) {
        match self.stored_mut(id) {
            Some(sum) => sum
                .downcast_mut::<Grad<T, D>>()
                .expect("typed-tensor internal error: one node, two gradient types")
                .assign_same(crate::ops::Add, &grad),
            None => self.store(id, Box::new(grad)),
        }
    }

    /// Node `id`'s stored gradient, type-erased. With [`Self::store`], the map work of [`Self::accumulate`] and
    /// [`Self::take`] outside their per-shape instances.
    #[inline(never)]
    fn stored_mut(&mut self, id: usize) -> Option<&mut Box<dyn Any + Send + Sync>> {
        self.by_id.get_mut(&id)
    }

    /// Stores node `id`'s first gradient.
    #[inline(never)]
    fn store(&mut self, id: usize, grad: Box<dyn Any + Send + Sync>) {
        self.by_id.insert(id, grad);
    }

    /// Removes node `id`'s gradient, type-erased.
    #[inline(never)]
    fn remove(&mut self, id: usize) -> Option<Box<dyn Any + Send + Sync>> {
        self.by_id.remove(&id)
    }

    /// Removes and returns node `id`'s gradient, padded.
    pub(crate) fn take<T: FloatDType, D: Device>(&mut self, id: usize) -> Option<Grad<T, D>> {
        let sum = self.remove(id);
        self.with_parts(id, sum).map(|g| {
            *g.downcast::<Grad<T, D>>()
                .expect("typed-tensor internal error: a node's gradient has another type")
        })
    }
}
