// Reductions (`sum::<Axis<I>>`, ...) remove an axis the shape must have. This is the rule they are built on.
use typed_tensor::prelude::*;
use typed_tensor::shape::HasAxis;

fn reduced<S: HasAxis<Ax>, Ax>() {}

fn main() {
    let _r = reduced::<Rank2<2, 3>, Axis<2>>();
}
