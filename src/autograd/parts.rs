//! Gradients that arrive in pieces: the parts of a `split`, the steps of a sequence read one at a time
//! (`x.i((.., t))`). Each piece's gradient covers a range of one axis of its source; embedding each into a
//! source-sized tensor as it arrives costs a pass over the whole source per piece, so reading a sequence step by
//! step cost time quadratic in its length (an LSTM layer of 128 steps spent most of its backward pass there).
//! Instead the pieces wait beside the store and are joined once, when the source's gradient is read: zeros in the
//! gaps, one concatenation.

use super::graph::Gradients;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::{Grad, Padded};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::any::Any;

/// A node's gradient pieces along `axis` of its padded dims `full`: `(start, piece)`.
pub(crate) struct Parts<T: FloatDType, D: Device> {
    full: Padded,
    axis: usize,
    pieces: Vec<(usize, Grad<T, D>)>,
}

/// [`Parts`] of any element type and device, as the store keeps them.
pub(crate) trait PendingParts: Send + Sync {
    /// For adding pieces of the concrete type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// The pieces joined into one gradient, plus `sum` (the node's gradient given whole, if any).
    fn merged(
        self: Box<Self>,
        sum: Option<Box<dyn Any + Send + Sync>>,
    ) -> Box<dyn Any + Send + Sync>;
}

impl<T: FloatDType, D: Device> PendingParts for Parts<T, D> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn merged(
        self: Box<Self>,
        sum: Option<Box<dyn Any + Send + Sync>>,
    ) -> Box<dyn Any + Send + Sync> {
        let mut joined = self.joined();
        if let Some(sum) = sum {
            let sum = sum
                .downcast::<Grad<T, D>>()
                .expect("typed-tensor internal error: one node, two gradient types");
            joined.assign_same(crate::ops::Add, &sum);
        }
        Box::new(joined)
    }
}

impl<T: FloatDType, D: Device> Parts<T, D> {
    /// The pieces as one gradient of dims `full`: one concatenation with zeros in the gaps when they do not
    /// overlap (the usual case: each piece read once), else each embedded and summed.
    fn joined(mut self) -> Grad<T, D> {
        self.pieces.sort_by_key(|(start, _)| *start);
        let len = |g: &Grad<T, D>| g.dims()[self.axis];
        let disjoint = self
            .pieces
            .windows(2)
            .all(|w| w[0].0 + len(&w[0].1) <= w[1].0);
        if !disjoint {
            let mut pieces = self.pieces.into_iter();
            let (start, first) = pieces.next().expect("a node's parts hold a piece");
            let mut sum = first.embed_in(self.full, self.axis, start);
            for (start, piece) in pieces {
                sum.assign_same(
                    crate::ops::Add,
                    &piece.embed_in(self.full, self.axis, start),
                );
            }
            return sum;
        }
        Grad::embed_pieces(self.full, self.axis, &self.pieces)
    }
}

impl Gradients {
    /// Adds `grad`, the gradient of entries `start..` of `axis` of node `id` (whose padded dims are `full`), to
    /// what that node has received; joined with its other pieces when its gradient is read.
    pub(crate) fn accumulate_part<T: FloatDType, D: Device>(
        &mut self,
        id: usize,
        (full, axis, start): (Padded, usize, usize),
        grad: Grad<T, D>,
    ) {
        if grad.dims()[axis] == full.dims()[axis] {
            return self.accumulate(id, grad); // the whole axis: nothing to join
        }
        match self.parts.get_mut(&id) {
            None => {
                let pieces = alloc::vec![(start, grad)];
                self.parts
                    .insert(id, Box::new(Parts { full, axis, pieces }));
            }
            Some(pending) => match pending.as_any_mut().downcast_mut::<Parts<T, D>>() {
                Some(parts) if parts.full == full && parts.axis == axis => {
                    let len = grad.dims()[axis];
                    let same =
                        |(s, g): &&mut (usize, Grad<T, D>)| *s == start && g.dims()[axis] == len;
                    match parts.pieces.iter_mut().find(same) {
                        Some((_, piece)) => piece.assign_same(crate::ops::Add, &grad),
                        None => parts.pieces.push((start, grad)),
                    }
                }
                // Pieces along another axis of the same node (rare): this one joins the whole sum now.
                _ => self.accumulate(id, grad.embed_in(full, axis, start)),
            },
        }
    }

    /// Node `id`'s gradient given whole (`sum`) joined with its pieces, if any arrived.
    pub(crate) fn with_parts(
        &mut self,
        id: usize,
        sum: Option<Box<dyn Any + Send + Sync>>,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        match self.parts.remove(&id) {
            Some(parts) => Some(parts.merged(sum)),
            None => sum,
        }
    }

    /// Joins every node's waiting pieces (at the end of the reverse walk: the leaves' gradients).
    pub(crate) fn settle(&mut self) {
        let ids: Vec<usize> = self.parts.keys().copied().collect();
        for id in ids {
            let sum = self.by_id.remove(&id);
            if let Some(joined) = self.with_parts(id, sum) {
                self.by_id.insert(id, joined);
            }
        }
    }
}
