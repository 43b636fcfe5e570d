//! Autograd: every differentiable op's gradient against central finite differences in f64 (random inputs,
//! strided views included), known values, and the graph's bookkeeping (shared parameters, constants, reuse).

use crate::common::*;
use typed_tensor::autograd::{check_gradient, Gradients, Traced, Var};
use typed_tensor::ops::{Cumulative, Interpolation, PadMode, TopK};
use typed_tensor::prelude::*;
use typed_tensor::shape::{BroadcastShapes, ConstShape};

/// Largest accepted `|analytic - numeric| / max(1, |numeric|)`: central differences with eps = 1e-5 in f64 are
/// accurate to ~1e-9 on these smooth functions.
const TOL: f64 = 1e-6;

/// `sum(t * w)` for a fixed random `w`: a scalar whose gradient with respect to `t` is `w`, not all ones.
fn weighted<S: ConstShape + BroadcastShapes<S, Output = S>, D: Device>(
    t: Traced<f64, S, D>,
) -> Traced<f64, (), D> {
    let w: Tensor<f64, S, D> = random(999);
    (t * &w).sum_all()
}

fn check<S: Shape, D: Device>(what: &str, x: &Var<f64, S, D>, f: impl Fn() -> Traced<f64, (), D>) {
    let worst = check_gradient(x, 1e-5, f);
    assert!(worst.error < TOL, "{what}: {worst:?}");
}

/// A parameter of uniform values in [lo, hi).
fn param<S: ConstShape + BroadcastShapes<S, Output = S>, D: AutogradDevice>(
    seed: u64,
    lo: f64,
    hi: f64,
) -> Var<f64, S, D> {
    let u: Tensor<f64, S, D> = random(seed); // [-1, 1)
    Var::new(u.affine((hi - lo) / 2.0, (hi + lo) / 2.0))
}

type M = Rank2<3, 4>;

fn unary_ops<D: AutogradDevice>() {
    type Case<D> = (
        &'static str,
        fn(&Traced<f64, M, D>) -> Traced<f64, M, D>,
        (f64, f64),
    );
    let cases: Vec<Case<D>> = vec![
        ("neg", |x| -x, (-2.0, 2.0)),
        ("affine", |x| x.affine(-1.5, 0.25), (-2.0, 2.0)),
        ("powf", |x| x.powf(2.5), (0.5, 2.0)),
        ("clamp", |x| x.clamp(-0.5, 0.5), (-2.0, 2.0)),
        ("abs", |x| x.abs(), (0.1, 2.0)),
        ("sqr", |x| x.sqr(), (-2.0, 2.0)),
        ("exp", |x| x.exp(), (-2.0, 2.0)),
        ("ln", |x| x.ln(), (0.2, 3.0)),
        ("log", |x| x.log(), (0.2, 3.0)),
        ("sqrt", |x| x.sqrt(), (0.2, 3.0)),
        ("recip", |x| x.recip(), (0.5, 3.0)),
        ("sin", |x| x.sin(), (-3.0, 3.0)),
        ("cos", |x| x.cos(), (-3.0, 3.0)),
        ("tanh", |x| x.tanh(), (-2.0, 2.0)),
        ("sigmoid", |x| x.sigmoid(), (-3.0, 3.0)),
        ("relu", |x| x.relu(), (-2.0, 2.0)),
        ("silu", |x| x.silu(), (-3.0, 3.0)),
        ("gelu", |x| x.gelu(), (-3.0, 3.0)),
        ("floor", |x| x.floor(), (-2.0, 2.0)),
        ("round", |x| x.round(), (-2.0, 2.0)),
        ("sign", |x| x.sign(), (-2.0, 2.0)),
        ("log1p", |x| x.log1p(), (-0.5, 2.0)),
        ("expm1", |x| x.expm1(), (-2.0, 2.0)),
        ("log2", |x| x.log2(), (0.2, 3.0)),
        ("log10", |x| x.log10(), (0.2, 3.0)),
        ("exp2", |x| x.exp2(), (-2.0, 2.0)),
        ("rsqrt", |x| x.rsqrt(), (0.2, 3.0)),
        ("tan", |x| x.tan(), (-1.2, 1.2)),
        ("asin", |x| x.asin(), (-0.9, 0.9)),
        ("acos", |x| x.acos(), (-0.9, 0.9)),
        ("atan", |x| x.atan(), (-2.0, 2.0)),
        ("sinh", |x| x.sinh(), (-2.0, 2.0)),
        ("cosh", |x| x.cosh(), (-2.0, 2.0)),
        ("asinh", |x| x.asinh(), (-2.0, 2.0)),
        ("acosh", |x| x.acosh(), (1.2, 3.0)),
        ("atanh", |x| x.atanh(), (-0.9, 0.9)),
        ("erf", |x| x.erf(), (-2.0, 2.0)),
        ("erfc", |x| x.erfc(), (-2.0, 2.0)),
        ("softsign", |x| x.softsign(), (-2.0, 2.0)),
        ("relu6", |x| x.relu6(), (-2.0, 2.0)),
        ("hardtanh", |x| x.hardtanh(-0.5, 0.5), (-2.0, 2.0)),
        ("hardsigmoid", |x| x.hardsigmoid(), (-2.5, 2.5)),
        ("hardswish", |x| x.hardswish(), (-2.5, 2.5)),
        ("mish", |x| x.mish(), (-3.0, 3.0)),
        ("log_sigmoid", |x| x.log_sigmoid(), (-3.0, 3.0)),
        ("selu", |x| x.selu(), (-2.0, 2.0)),
        ("leaky_relu", |x| x.leaky_relu(0.1), (-2.0, 2.0)),
        ("elu", |x| x.elu(1.5), (-2.0, 2.0)),
        ("celu", |x| x.celu(2.0), (-2.0, 2.0)),
        ("softplus", |x| x.softplus(2.0, 5.0), (-2.0, 2.0)),
        ("scalars", |x| ((x + 1.0) * 3.0 - 0.5) / 4.0, (-2.0, 2.0)),
    ];
    for (i, (name, op, (lo, hi))) in cases.into_iter().enumerate() {
        let x = param::<M, D>(10 + i as u64, lo, hi);
        // Keep inputs off the kinks (clamp bounds, relu/abs at 0) where the derivative jumps.
        let v = x.value().to_vec();
        let kinks = [-0.5, 0.0, 0.5];
        assert!(
            !v.iter().any(|a| kinks.iter().any(|k| (a - k).abs() < 1e-3)),
            "{name}: an input sits on a kink; pick another seed"
        );
        check(name, &x, || weighted(op(&x.trace())));
        // The same op on a transposed view of a parameter.
        let xt = Var::new(x.value().t().contiguous().t());
        check(&format!("{name} (strided input)"), &xt, || {
            weighted(op(&xt.trace().t().t()))
        });
    }
}

fn binary_ops<D: AutogradDevice>() {
    type Bin<D> = fn(&Traced<f64, M, D>, &Traced<f64, Rank1<4>, D>) -> Traced<f64, M, D>;
    let cases: [(&str, Bin<D>); 6] = [
        ("add", |a, b| a + b),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
    ];
    for (i, (name, op)) in cases.into_iter().enumerate() {
        let a = param::<M, D>(20 + i as u64, -2.0, 2.0);
        let b = param::<Rank1<4>, D>(30 + i as u64, 0.5, 2.0); // broadcast over rows; away from 0 for div
        check(&format!("{name}: lhs"), &a, || {
            weighted(op(&a.trace(), &b.trace()))
        });
        check(&format!("{name}: broadcast rhs"), &b, || {
            weighted(op(&a.trace(), &b.trace()))
        });
        // With a constant on one side, and a transposed view on the other.
        let at = Var::new(a.value().t().contiguous().t());
        let c = b.value();
        check(&format!("{name}: strided lhs, constant rhs"), &at, || {
            weighted(op(&at.trace(), &Traced::constant(c.clone())))
        });
    }
    // The float-only binary ops, each where it is smooth: pow on positive bases, the remainders away from the
    // multiples of b (the seeds keep every a / b off an integer by more than the step).
    type Ranged<D> = (&'static str, Bin<D>, (f64, f64), (f64, f64));
    let float_cases: [Ranged<D>; 4] = [
        ("atan2", |a, b| a.atan2(b), (-2.0, 2.0), (0.5, 2.0)),
        ("pow", |a, b| a.pow(b), (0.5, 2.0), (0.5, 2.0)),
        ("fmod", |a, b| a.fmod(b), (-2.0, 2.0), (0.5, 2.0)),
        ("remainder", |a, b| a.remainder(b), (-2.0, 2.0), (0.5, 2.0)),
    ];
    for (i, (name, op, (alo, ahi), (blo, bhi))) in float_cases.into_iter().enumerate() {
        let a = param::<M, D>(60 + i as u64, alo, ahi);
        let b = param::<Rank1<4>, D>(70 + i as u64, blo, bhi);
        check(&format!("{name}: lhs"), &a, || {
            weighted(op(&a.trace(), &b.trace()))
        });
        check(&format!("{name}: broadcast rhs"), &b, || {
            weighted(op(&a.trace(), &b.trace()))
        });
    }
    // The same operand on both sides: gradients from both uses add up (d(x * x)/dx = 2x).
    let x = param::<M, D>(40, -2.0, 2.0);
    check("x * x", &x, || weighted(&x.trace() * &x.trace()));
}

fn matmuls<D: AutogradDevice>() {
    // (M, K) x (K, N), with a transposed rhs view.
    let a = param::<Rank2<3, 5>, D>(50, -1.0, 1.0);
    let b = param::<Rank2<4, 5>, D>(51, -1.0, 1.0);
    check("matmul lhs", &a, || {
        weighted(a.trace().matmul(&b.trace().t()))
    });
    check("matmul rhs (transposed view)", &b, || {
        weighted(a.trace().matmul(&b.trace().t()))
    });
    // Batched, and batched x a shared matrix (its gradient sums over the batch).
    let x = param::<Rank3<2, 3, 5>, D>(52, -1.0, 1.0);
    let y = param::<Rank3<2, 5, 4>, D>(53, -1.0, 1.0);
    let w = param::<Rank2<5, 4>, D>(54, -1.0, 1.0);
    check("batched lhs", &x, || weighted(x.trace().matmul(&y.trace())));
    check("batched rhs", &y, || weighted(x.trace().matmul(&y.trace())));
    check("batched x shared: lhs", &x, || {
        weighted(x.trace().matmul(&w.trace()))
    });
    check("batched x shared: shared", &w, || {
        weighted(x.trace().matmul(&w.trace()))
    });
    // A shared matrix on the left, a matrix shared by two batch axes, vectors shared by a batch.
    check("shared x batched: shared", &a, || {
        weighted(a.trace().matmul(&y.trace()))
    });
    check("shared x batched: batched", &y, || {
        weighted(a.trace().matmul(&y.trace()))
    });
    let x4 = param::<Rank4<2, 2, 3, 5>, D>(57, -1.0, 1.0);
    check("rank 4 x shared: rank 4", &x4, || {
        weighted(x4.trace().matmul(&w.trace()))
    });
    check("rank 4 x shared: shared", &w, || {
        weighted(x4.trace().matmul(&w.trace()))
    });
    let y4 = param::<Rank4<2, 2, 5, 4>, D>(58, -1.0, 1.0);
    check("shared x rank 4: shared", &a, || {
        weighted(a.trace().matmul(&y4.trace()))
    });
    let k = param::<Rank1<5>, D>(59, -1.0, 1.0);
    check("batched x vector: vector", &k, || {
        weighted(x.trace().matmul(&k.trace()))
    });
    check("vector x batched: batched", &y, || {
        weighted(k.trace().matmul(&y.trace()))
    });
    // Matrix-vector, vector-matrix, dot.
    let v = param::<Rank1<5>, D>(55, -1.0, 1.0);
    let u = param::<Rank1<3>, D>(56, -1.0, 1.0);
    check("matrix-vector: matrix", &a, || {
        weighted(a.trace().matmul(&v.trace()))
    });
    check("matrix-vector: vector", &v, || {
        weighted(a.trace().matmul(&v.trace()))
    });
    check("vector-matrix: vector", &u, || {
        weighted(u.trace().matmul(&a.trace()))
    });
    check("vector-matrix: matrix", &a, || {
        weighted(u.trace().matmul(&a.trace()))
    });
    check("dot", &v, || v.trace().matmul(&v.trace()));
    // A plain tensor as the other operand.
    let c: Tensor<f64, Rank2<5, 4>, D> = random(57);
    check("matmul with a constant", &a, || {
        weighted(a.trace().matmul(&c))
    });
    // Operands stored column by column get their gradients computed transposed: a transposed lhs, and batched
    // transposed views on both sides.
    let at = param::<Rank2<5, 3>, D>(58, -1.0, 1.0);
    check("matmul lhs (transposed view)", &at, || {
        weighted(at.trace().t().matmul(&b.trace().t()))
    });
    let xt = param::<Rank3<2, 5, 3>, D>(59, -1.0, 1.0);
    let yt = param::<Rank3<2, 4, 5>, D>(60, -1.0, 1.0);
    let batched_t = || {
        let l = xt.trace().transpose::<Axis<1>, Axis<2>>();
        weighted(l.matmul(&yt.trace().transpose::<Axis<1>, Axis<2>>()))
    };
    check("batched transposed lhs", &xt, batched_t);
    check("batched transposed rhs", &yt, batched_t);
    // The gradient has the operand's memory order: a weight used as `w.t()` (a linear layer) gets a dense
    // gradient, which an optimizer reads in place.
    let g = a.trace().matmul(&b.trace().t()).sum_all().backward();
    assert!(g.get(&b).is_contiguous() && g.get(&a).is_contiguous());
}

fn reductions<D: AutogradDevice>() {
    let x = param::<Rank3<2, 3, 4>, D>(60, -2.0, 2.0);
    check("sum axis 1", &x, || weighted(x.trace().sum::<Axis<1>>()));
    check("sum axes 0, 2", &x, || {
        weighted(x.trace().sum::<(Axis<0>, Axis<2>)>())
    });
    check("sum keepdim", &x, || {
        weighted(x.trace().sum_keepdim::<Axis<2>>())
    });
    check("sum all", &x, || x.trace().sum_all());
    check("mean axis 2", &x, || weighted(x.trace().mean::<Axis<2>>()));
    check("mean all", &x, || x.trace().mean_all());
    check("std axis 1", &x, || weighted(x.trace().std::<Axis<1>>()));
    check("std_population all", &x, || x.trace().std_population_all());
    check("max axis 1", &x, || weighted(x.trace().max::<Axis<1>>()));
    check("min keepdim", &x, || {
        weighted(x.trace().min_keepdim::<Axis<0>>())
    });
    check("max all", &x, || x.trace().max_all());
    check("var axis 1", &x, || weighted(x.trace().var::<Axis<1>>()));
    check("var_population keepdim", &x, || {
        weighted(x.trace().var_population_keepdim::<(Axis<0>, Axis<2>)>())
    });
    check("var all", &x, || x.trace().var_all());
    check("norm axis 2", &x, || weighted(x.trace().norm::<Axis<2>>()));
    check("norm all", &x, || x.trace().norm_all());
    // Ties: the gradient is split evenly among the positions holding the extremum (PyTorch's amax/amin, JAX),
    // so each lane's gradient sums to the output's. Before, a 2-way tie doubled it and a 3-way tie tripled it.
    let t = Var::new(Tensor::<f64, _, D>::from_array([
        [1.0, 3.0, 3.0, 0.0],    // max: 2-way tie
        [2.0, 2.0, 2.0, -1.0],   // max: 3-way tie; min: single
        [-4.0, 5.0, -4.0, -4.0], // min: 3-way tie
    ]));
    let grad_of = |f: &dyn Fn(Traced<f64, Rank2<3, 4>, D>) -> Traced<f64, (), D>| {
        f(t.trace()).backward().get(&t).to_array()
    };
    let third = 1.0 / 3.0;
    assert_eq!(
        grad_of(&|x| x.max::<Axis<1>>().sum_all()),
        [
            [0.0, 0.5, 0.5, 0.0],
            [third, third, third, 0.0],
            [0.0, 1.0, 0.0, 0.0]
        ]
    );
    assert_eq!(
        grad_of(&|x| x.min_keepdim::<Axis<1>>().sum_all()),
        [
            [0.0, 0.0, 0.0, 1.0],
            [0.0, 0.0, 0.0, 1.0],
            [third, 0.0, third, third]
        ]
    );
    // Over the whole tensor (5 appears once; -4 three times), and weighted per lane along axis 0.
    assert_eq!(grad_of(&|x| x.max_all()).iter().flatten().sum::<f64>(), 1.0);
    assert_eq!(grad_of(&|x| x.min_all())[2], [third, 0.0, third, third]);
    assert_eq!(
        grad_of(
            &|x| (x.max::<Axis<0>>() * &Tensor::<f64, _, D>::from_array([1.0, 2.0, 4.0, 8.0]))
                .sum_all()
        ),
        [
            [0.0, 0.0, 4.0, 8.0],
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 2.0, 0.0, 0.0]
        ]
    );
    // A lane holding NaN: its maximum is NaN, and the gradient goes to the NaN (split if several).
    let n = Var::new(Tensor::<f64, _, D>::from_array([
        [1.0, f64::NAN, f64::NAN],
        [1.0, 2.0, 0.0],
    ]));
    let g = n
        .trace()
        .max::<Axis<1>>()
        .sum_all()
        .backward()
        .get(&n)
        .to_array();
    assert_eq!(g, [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0]]);

    // An all-zero lane: the norm's gradient there is 0, not NaN.
    let z = Var::new(Tensor::<f64, _, D>::from_array([[0.0, 0.0], [3.0, 4.0]]));
    let g = z
        .trace()
        .norm::<Axis<1>>()
        .sum_all()
        .backward()
        .get(&z)
        .to_vec();
    assert_eq!(g, [0.0, 0.0, 0.6, 0.8]);
    // On a permuted view.
    check("sum of a permuted view", &x, || {
        weighted(
            x.trace()
                .permute::<(Axis<2>, Axis<0>, Axis<1>)>()
                .sum::<Axis<2>>(),
        )
    });
}

fn views_and_lanes<D: AutogradDevice>() {
    let x = param::<Rank3<2, 3, 4>, D>(70, -2.0, 2.0);
    check("reshape", &x, || {
        weighted(x.trace().reshape::<Rank2<4, 6>>())
    });
    check("transpose", &x, || {
        weighted(x.trace().transpose::<Axis<0>, Axis<2>>())
    });
    check("permute", &x, || {
        weighted(x.trace().permute::<(Axis<1>, Axis<2>, Axis<0>)>())
    });
    check("narrow", &x, || {
        weighted(x.trace().narrow::<Axis<2>, 1, 2>())
    });
    check("unsqueeze + squeeze", &x, || {
        weighted(x.trace().unsqueeze::<Axis<1>>().squeeze::<Axis<1>>().sqr())
    });
    let r = param::<Rank2<1, 4>, D>(71, -2.0, 2.0);
    check("broadcast", &r, || {
        weighted(r.trace().broadcast::<Rank3<2, 3, 4>>())
    });
    check("expand", &r, || {
        weighted(r.trace().expand::<Rank3<2, 3, 4>>())
    });
    assert_eq!(
        r.value().expand::<Rank3<2, 3, 4>>().to_vec(),
        r.value().broadcast::<Rank3<2, 3, 4>>().to_vec()
    );
    check("softmax", &x, || weighted(x.trace().softmax::<Axis<1>>()));
    check("log_softmax", &x, || {
        weighted(x.trace().log_softmax::<Axis<2>>())
    });
    check("softmax of a transposed view", &x, || {
        weighted(
            x.trace()
                .transpose::<Axis<1>, Axis<2>>()
                .softmax::<Axis<2>>(),
        )
    });
}

fn scans<D: AutogradDevice>() {
    let x = param::<Rank3<2, 3, 4>, D>(91, -2.0, 2.0);
    check("cumsum", &x, || weighted(x.trace().cumsum::<Axis<1>>()));
    check("cumsum of a transposed view", &x, || {
        weighted(
            x.trace()
                .transpose::<Axis<0>, Axis<2>>()
                .cumsum::<Axis<0>>(),
        )
    });
    check("cumprod", &x, || weighted(x.trace().cumprod::<Axis<2>>()));
    check("cummax", &x, || weighted(x.trace().cummax::<Axis<2>>().0));
    check("cummin", &x, || weighted(x.trace().cummin::<Axis<0>>().0));
    check("logcumsumexp", &x, || {
        weighted(x.trace().logcumsumexp::<Axis<2>>())
    });
    let wide = param::<Rank2<3, 4>, D>(92, -30.0, 30.0);
    check("logcumsumexp of wide-ranged inputs", &wide, || {
        weighted(wide.trace().logcumsumexp::<Axis<1>>())
    });
    // Zeros, one and two in a lane: the gradient needs no division by the input.
    let zeros = Var::new(Tensor::<f64, Rank2<2, 4>, D>::from_array([
        [0.5, 0.0, 1.5, -1.0],
        [2.0, 0.0, -0.5, 0.0],
    ]));
    check("cumprod through zeros", &zeros, || {
        weighted(zeros.trace().cumprod::<Axis<1>>())
    });
    // Reverse and exclusive scans, each order, through zeros and on a transposed view.
    let both = Cumulative {
        reverse: true,
        exclusive: true,
    };
    for order in [Cumulative::REVERSE, Cumulative::EXCLUSIVE, both] {
        let what = |op: &str| format!("{op} {order:?}");
        check(&what("cumsum_with"), &x, || {
            weighted(x.trace().cumsum_with::<Axis<1>>(order))
        });
        check(&what("cumprod_with"), &x, || {
            weighted(x.trace().cumprod_with::<Axis<2>>(order))
        });
        check(&what("cumprod_with through zeros"), &zeros, || {
            weighted(zeros.trace().cumprod_with::<Axis<1>>(order))
        });
        check(&what("cumprod_with of a transposed view"), &x, || {
            weighted(
                x.trace()
                    .transpose::<Axis<0>, Axis<2>>()
                    .cumprod_with::<Axis<0>>(order),
            )
        });
    }
    // Known values: d/dx sum(cumprod([2, 0, 3])) = [1, 2 + 2 * 3, 0].
    let x = Var::new(Tensor::<f64, _, D>::from_array([2.0, 0.0, 3.0]));
    let grads = x.trace().cumprod::<Axis<0>>().sum_all().backward();
    assert_eq!(grads.get(&x).to_array(), [1.0, 8.0, 0.0]);
}

fn masking<D: AutogradDevice>() {
    let x = param::<Rank3<2, 3, 4>, D>(95, -2.0, 2.0);
    let mask = Tensor::<u8, Rank1<4>, D>::from_array([1, 0, 0, 1]);
    check("masked_fill", &x, || {
        weighted(x.trace().masked_fill(&mask, 5.0))
    });
    check("tril", &x, || weighted(x.trace().tril(0)));
    let lo = param::<Rank1<4>, D>(96, -1.0, -0.5);
    let hi = param::<Rank2<3, 4>, D>(97, 0.5, 1.0);
    check("clamp_tensor, input", &x, || {
        weighted(x.trace().clamp_tensor(&lo.trace(), &hi.trace()))
    });
    check("clamp_tensor, lower bound", &lo, || {
        weighted(x.trace().clamp_tensor(&lo.trace(), &hi.trace()))
    });
    check("clamp_tensor, upper bound", &hi, || {
        weighted(x.trace().clamp_tensor(&lo.trace(), &hi.trace()))
    });
    check("sort", &x, || weighted(x.trace().sort::<Axis<2>>(true).0));
    check("kthvalue", &x, || {
        weighted(x.trace().kthvalue::<Axis<2>>(3).unwrap().0)
    });
    check("median along a middle axis", &x, || {
        weighted(x.trace().median::<Axis<1>>().0)
    });
    let slopes = param::<Rank1<3>, D>(98, -0.5, 0.5);
    check("prelu, input", &x, || {
        weighted(x.trace().prelu(&slopes.trace()))
    });
    check("prelu, slopes", &slopes, || {
        weighted(x.trace().prelu(&slopes.trace()))
    });
    check("tile", &x, || {
        let t: Traced<f64, Rank3<4, 3, 8>, D> = x.trace().tile();
        (t * &random::<f64, Rank3<4, 3, 8>, D>(6)).sum_all()
    });
    check("repeat_interleave", &x, || {
        let t: Traced<f64, Rank3<2, 9, 4>, D> = x.trace().repeat_interleave::<Axis<1>, _>();
        (t * &random::<f64, Rank3<2, 9, 4>, D>(7)).sum_all()
    });
    // Rank 4, every axis repeated: the summed walk has eight axes, so the rule sums one axis at a time.
    let x4 = param::<Rank4<2, 3, 2, 2>, D>(99, -1.0, 1.0);
    check("tile of rank 4 along every axis", &x4, || {
        let t: Traced<f64, Rank4<4, 6, 4, 6>, D> = x4.trace().tile();
        (t * &random::<f64, Rank4<4, 6, 4, 6>, D>(8)).sum_all()
    });
    check("topk", &x, || {
        let (top, _) = x.trace().topk::<Axis<1>, 2>(false);
        (top * &random::<f64, Rank3<2, 2, 4>, D>(5)).sum_all()
    });
    check("topk unsorted", &x, || {
        let options = TopK {
            largest: true,
            sorted: false,
        };
        let (top, _) = x.trace().topk_with::<Axis<2>, 3>(options);
        (top * &random::<f64, Rank3<2, 3, 3>, D>(6)).sum_all()
    });
    check("triu of a transposed view", &x, || {
        weighted(x.trace().transpose::<Axis<1>, Axis<2>>().triu(-1))
    });
}

fn joins_casts_and_norms<D: AutogradDevice>() {
    let x = param::<Rank2<3, 4>, D>(100, -2.0, 2.0);
    let y = param::<Rank2<3, 2>, D>(101, -2.0, 2.0);
    check("cat: first", &x, || {
        weighted(x.trace().cat::<Axis<1>, 6, _>(&y))
    });
    check("cat: second", &y, || {
        weighted(x.trace().cat::<Axis<1>, 6, _>(&y))
    });
    for mode in [PadMode::Reflect, PadMode::Replicate, PadMode::Circular] {
        // Entries read twice (mirrored, repeated, wrapped) get both gradients.
        check(&format!("pad_mode {mode:?}"), &x, || {
            weighted(x.trace().pad_mode::<Axis<1>, 3, 2, 9>(mode))
        });
    }
    let image = param::<Rank4<1, 2, 5, 3>, D>(102, -2.0, 2.0);
    check("adaptive_avg_pool2d (overlapping bins)", &image, || {
        weighted(image.trace().adaptive_avg_pool2d::<3, 2>())
    });
    let channels = param::<Rank4<1, 4, 2, 3>, D>(104, -2.0, 2.0);
    check("pixel_shuffle", &channels, || {
        let y: Traced<f64, Rank4<1, 1, 4, 6>, D> = channels.trace().pixel_shuffle::<2, _, _, _>();
        weighted(y)
    });
    check("unfold", &image, || {
        let cols: Traced<f64, Rank4<1, 8, 4, 2>, D> = image
            .trace()
            .unfold::<2, 2, _, _, _, _>(typed_tensor::tensor::Conv::<1, 0, 1, 1>);
        weighted(cols)
    });
    let columns = param::<Rank4<1, 8, 4, 2>, D>(105, -1.0, 1.0);
    check("fold", &columns, || {
        let image: Traced<f64, Rank4<1, 2, 5, 3>, D> = columns
            .trace()
            .fold::<2, 2, _, _, _, _>(typed_tensor::tensor::Conv::<1, 0, 1, 1>);
        weighted(image)
    });
    let signal = param::<Rank3<1, 4, 3>, D>(106, -1.0, 1.0);
    let taps = param::<Rank3<4, 1, 3>, D>(107, -1.0, 1.0);
    check("conv_transpose1d: input", &signal, || {
        let y: Traced<f64, Rank3<1, 2, 5>, D> = signal
            .trace()
            .conv_transpose1d(&taps, typed_tensor::tensor::Conv::<2, 1, 1, 2>);
        weighted(y)
    });
    check("conv_transpose1d: weight", &taps, || {
        let y: Traced<f64, Rank3<1, 2, 5>, D> = signal
            .trace()
            .conv_transpose1d(&taps, typed_tensor::tensor::Conv::<2, 1, 1, 2>);
        weighted(y)
    });
    check("flatten of a transposed view", &image, || {
        let flat: Traced<f64, Rank2<1, 30>, D> = image
            .trace()
            .transpose::<Axis<2>, Axis<3>>()
            .flatten::<Axis<1>, Axis<3>, _>();
        weighted(flat)
    });
    let kernel = param::<Rank4<3, 2, 3, 2>, D>(103, -1.0, 1.0);
    let geometry = typed_tensor::tensor::Conv2dAxes::<2, 1, 1, 0, 1, 2, 1>;
    check("conv2d per axis: input", &image, || {
        let y: Traced<f64, Rank4<1, 3, 3, 1>, D> = image.trace().conv2d(&kernel, geometry);
        weighted(y)
    });
    check("conv2d per axis: weight", &kernel, || {
        let y: Traced<f64, Rank4<1, 3, 3, 1>, D> = image.trace().conv2d(&kernel, geometry);
        weighted(y)
    });
    for mode in [
        Interpolation::Nearest,
        Interpolation::Bilinear {
            align_corners: false,
        },
        Interpolation::Bicubic {
            align_corners: true,
        },
    ] {
        check(&format!("interpolate {mode:?}"), &image, || {
            weighted(image.trace().interpolate::<4, 7>(mode))
        });
    }
    check("pad_value", &x, || {
        weighted(x.trace().pad_value::<Axis<0>, 1, 1, 5>(2.5))
    });
    let c = x.value(); // fixed while x is perturbed
    check("stack", &x, || {
        let t = x.trace();
        weighted(Traced::stack::<Axis<1>, 3>(&[
            t.clone(),
            t.sqr(),
            Traced::constant(c.clone()),
        ]))
    });
    check("stack_slice", &x, || {
        let t = x.trace();
        let parts = [t.clone(), t.sqr(), Traced::constant(c.clone())];
        let stacked = Traced::stack_slice::<Axis<1>>(&parts); // (3, usize, 4)
        weighted(stacked.reshape_with_shape((Const::<3>, Const::<3>, Const::<4>)))
    });
    check("unbind", &x, || {
        // Column 0 times column 3, column 1 squared, column 2 never read.
        let columns = x.trace().unbind::<Axis<1>>();
        weighted(columns[0].clone() * &columns[3] + &columns[1].sqr())
    });
    // Through f32 and back: the gradient converts at both ends (f32 rounding limits the agreement).
    let worst = check_gradient(&x, 1e-3, || {
        weighted(x.trace().to_dtype::<f32>().exp().to_dtype::<f64>())
    });
    assert!(worst.error < 1e-4, "to_dtype: {worst:?}");
    check("layer_norm", &x, || {
        weighted(x.trace().layer_norm::<Axis<1>>(1e-5))
    });
    check("layer_norm over axis 0", &x, || {
        weighted(x.trace().layer_norm::<Axis<0>>(1e-5))
    });
    check("rms_norm", &x, || {
        weighted(x.trace().rms_norm::<Axis<1>>(1e-5))
    });
    check("logsumexp", &x, || {
        weighted(x.trace().logsumexp::<Axis<1>>())
    });
    check("logsumexp of a transposed view", &x, || {
        weighted(x.trace().t().logsumexp::<Axis<1>>())
    });
}

fn convolutions<D: AutogradDevice>() {
    use typed_tensor::tensor::{Conv, ConvGeometry, Pool2d};
    // Stride 1, padding 1.
    let x = param::<Rank4<2, 3, 5, 5>, D>(110, -1.0, 1.0);
    let w = param::<Rank4<4, 3, 3, 3>, D>(111, -1.0, 1.0);
    let f = || -> Traced<f64, (), D> {
        let y: Traced<f64, Rank4<2, 4, 5, 5>, D> = x.trace().conv2d(&w, Conv::<1, 1, 1, 1>);
        weighted(y)
    };
    check("conv2d input", &x, f);
    check("conv2d weight", &w, f);
    // Stride 2, dilation 2, groups 2 on a 7x8 input (the last row and column are never read), input a
    // channels-last view.
    let nhwc = param::<Rank4<2, 7, 8, 4>, D>(112, -1.0, 1.0);
    let wg = param::<Rank4<6, 2, 3, 2>, D>(113, -1.0, 1.0);
    let g = || -> Traced<f64, (), D> {
        let x = nhwc
            .trace()
            .permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>();
        let y: Traced<f64, Rank4<2, 6, 3, 4>, D> = x.conv2d(&wg, Conv::<2, 1, 2, 2>);
        weighted(y)
    };
    check("conv2d s2 d2 g2: input", &nhwc, g);
    check("conv2d s2 d2 g2: weight", &wg, g);
    // conv1d.
    let s = param::<Rank3<2, 4, 9>, D>(114, -1.0, 1.0);
    let k = param::<Rank3<6, 2, 3>, D>(115, -1.0, 1.0);
    let h = || -> Traced<f64, (), D> {
        let y: Traced<f64, Rank3<2, 6, 5>, D> = s.trace().conv1d(&k, Conv::<2, 1, 1, 2>);
        weighted(y)
    };
    check("conv1d input", &s, h);
    check("conv1d weight", &k, h);
    // conv_transpose2d, stride 2, groups 2.
    let t = param::<Rank4<1, 4, 3, 3>, D>(116, -1.0, 1.0);
    let wt = param::<Rank4<4, 1, 4, 4>, D>(117, -1.0, 1.0);
    let ct = || -> Traced<f64, (), D> {
        let y: Traced<f64, Rank4<1, 2, 6, 6>, D> =
            t.trace().conv_transpose2d(&wt, Conv::<2, 1, 1, 2>);
        weighted(y)
    };
    check("conv_transpose2d input", &t, ct);
    check("conv_transpose2d weight", &wt, ct);
    // With output padding (the extra row and column read the windows past the last full one).
    let cp = || -> Traced<f64, (), D> {
        let y: Traced<f64, Rank4<1, 2, 7, 7>, D> = t
            .trace()
            .conv_transpose2d(&wt, Conv::<2, 1, 1, 2>.output_padding::<1, 1>());
        weighted(y)
    };
    check("conv_transpose2d output padding: input", &t, cp);
    check("conv_transpose2d output padding: weight", &wt, cp);
    // Output padding at least the stride, below the dilation: the gradient's conv2d is longer than the input.
    let cd = || -> Traced<f64, (), D> {
        let y: Traced<f64, Rank4<1, 2, 8, 8>, D> = t
            .trace()
            .conv_transpose2d(&wt, Conv::<1, 1, 2, 2>.output_padding::<1, 1>());
        weighted(y)
    };
    check(
        "conv_transpose2d output padding below the dilation: input",
        &t,
        cd,
    );
    check(
        "conv_transpose2d output padding below the dilation: weight",
        &wt,
        cd,
    );
    // Asymmetric padding: a row after and none before (stride 2 leaves that padded row unread), more columns
    // before than after; a transposed convolution with asymmetric and output padding.
    let asym = Conv::<2, 0, 1, 2>.asymmetric_padding::<0, 1, 2, 1>();
    let ca = || -> Traced<f64, (), D> {
        let x = nhwc
            .trace()
            .permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>();
        let y: Traced<f64, Rank4<2, 6, 3, 5>, D> = x.conv2d(&wg, asym);
        weighted(y)
    };
    check("conv2d asymmetric padding: input", &nhwc, ca);
    check("conv2d asymmetric padding: weight", &wg, ca);
    let cta = || -> Traced<f64, (), D> {
        let geometry = Conv::<2, 0, 1, 2>.asymmetric_padding::<1, 2, 0, 1>();
        let y: Traced<f64, Rank4<1, 2, 6, 8>, D> = t
            .trace()
            .conv_transpose2d(&wt, geometry.output_padding::<1, 1>());
        weighted(y)
    };
    check("conv_transpose2d asymmetric padding: input", &t, cta);
    check("conv_transpose2d asymmetric padding: weight", &wt, cta);
    // A causal conv1d (two zeros before the sequence, none after) and conv_transpose1d with output padding.
    let causal = || -> Traced<f64, (), D> {
        let y: Traced<f64, Rank3<2, 6, 5>, D> = s
            .trace()
            .conv1d(&k, Conv::<2, 0, 1, 2>.asymmetric_padding::<2, 0, 2, 0>());
        weighted(y)
    };
    check("conv1d causal: input", &s, causal);
    check("conv1d causal: weight", &k, causal);
    let short = param::<Rank3<2, 6, 4>, D>(119, -1.0, 1.0);
    let ct1 = || -> Traced<f64, (), D> {
        let y: Traced<f64, Rank3<2, 4, 8>, D> = short
            .trace()
            .conv_transpose1d(&k, Conv::<2, 1, 1, 2>.output_padding::<1, 1>());
        weighted(y)
    };
    check("conv_transpose1d output padding: input", &short, ct1);
    check("conv_transpose1d output padding: weight", &k, ct1);
    let ct1d = || -> Traced<f64, (), D> {
        let y: Traced<f64, Rank3<2, 4, 12>, D> = short
            .trace()
            .conv_transpose1d(&k, Conv::<1, 0, 3, 2>.output_padding::<2, 2>());
        weighted(y)
    };
    check(
        "conv_transpose1d output padding below the dilation: input",
        &short,
        ct1d,
    );
    check(
        "conv_transpose1d output padding below the dilation: weight",
        &k,
        ct1d,
    );
    // conv3d with groups: depth stride 2 and padding 1, so the first and last windows each reach one padding slice.
    let v = param::<Rank5<1, 2, 4, 3, 3>, D>(120, -1.0, 1.0);
    let wv = param::<Rank5<2, 1, 2, 2, 2>, D>(121, -1.0, 1.0);
    let c3 = || -> Traced<f64, (), D> {
        let geometry = typed_tensor::tensor::Conv3dAxes::<2, 1, 1, 1, 0, 1, 1, 1, 1, 2>;
        let y: Traced<f64, Rank5<1, 2, 3, 2, 4>, D> = v.trace().conv3d(&wv, geometry);
        weighted(y)
    };
    check("conv3d: input", &v, c3);
    check("conv3d: weight", &wv, c3);
    let c3a = || -> Traced<f64, (), D> {
        use typed_tensor::tensor::Conv3dGeometry;
        let geometry = typed_tensor::tensor::Conv3dAxes::<2, 1, 2, 0, 0, 0, 1, 1, 1, 2>
            .asymmetric_padding_3d::<1, 0, 0, 1, 2, 0>();
        let y: Traced<f64, Rank5<1, 2, 2, 3, 2>, D> = v.trace().conv3d(&wv, geometry);
        weighted(y)
    };
    check("conv3d asymmetric padding: input", &v, c3a);
    check("conv3d asymmetric padding: weight", &wv, c3a);
    // Pooling: non-overlapping and overlapping windows, with padding.
    let p = param::<Rank4<2, 3, 5, 6>, D>(118, -1.0, 1.0);
    check("max_pool2d 2/2/0", &p, || {
        let y: Traced<f64, Rank4<2, 3, 2, 3>, D> = p.trace().max_pool2d(Pool2d::<2, 2, 0>);
        weighted(y)
    });
    check("max_pool2d 3/2/1", &p, || {
        let y: Traced<f64, Rank4<2, 3, 3, 3>, D> = p.trace().max_pool2d(Pool2d::<3, 2, 1>);
        weighted(y)
    });
    check("avg_pool2d 3/2/1", &p, || {
        let y: Traced<f64, Rank4<2, 3, 3, 3>, D> = p.trace().avg_pool2d(Pool2d::<3, 2, 1>);
        weighted(y)
    });
}

fn rearrangements<D: AutogradDevice>() {
    let x = param::<Rank2<3, 4>, D>(120, -2.0, 2.0);
    check("flip", &x, || weighted(x.trace().flip::<Axis<1>>()));
    check("split_sizes", &x, || {
        let (a, b, c) = x
            .trace()
            .split_sizes::<Axis<1>, (Const<1>, Const<2>, Const<1>)>();
        weighted(a * 3.0) + weighted(b.sqr()) + weighted(c.exp())
    });
    check("split_sizes, a piece unused", &x, || {
        let (_, b) = x.trace().split_sizes::<Axis<0>, (Const<1>, Const<2>)>();
        weighted(b.tanh())
    });
    check("concat of three, one shared", &x, || {
        let (a, b) = x.trace().split_sizes::<Axis<1>, (Const<1>, Const<3>)>();
        let c: Traced<f64, Rank2<3, 5>, D> = Traced::concat::<Axis<1>, 5>((&b, &a, &a.sqr()));
        weighted(c * 1.5)
    });
    check("flip of two axes", &x, || {
        weighted(x.trace().flip::<(Axis<1>, Axis<0>)>())
    });
    check("roll", &x, || weighted(x.trace().roll::<Axis<1>>(-3)));
    check("pad", &x, || weighted(x.trace().pad::<Axis<0>, 1, 2, 6>()));
    check("split", &x, || {
        let [a, b] = x.trace().split::<Axis<1>, 2, 2>();
        weighted(a * 2.0) + weighted(b.sqr())
    });
    let mask = Tensor::<u8, Rank2<3, 4>, D>::from_array([[1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 0, 0]]);
    let y = param::<Rank2<3, 4>, D>(121, -2.0, 2.0);
    check("where_cond: on_true", &x, || {
        weighted(Traced::where_cond(&mask, &x.trace(), &y))
    });
    check("where_cond: on_false", &y, || {
        weighted(Traced::where_cond(&mask, &x.trace(), &y))
    });
    check("gelu_erf", &x, || weighted(x.trace().gelu_erf()));
    let z = Var::new(Tensor::<f64, _, D>::from_array([[0.0, 1.5], [-1.0, 0.0]]));
    check("gelu_erf at 0", &z, || weighted(z.trace().gelu_erf()));
    // Products with no zero, one zero and two zeros in a lane (central differences are exact: prod is linear in
    // each element).
    let p = Var::new(Tensor::<f64, _, D>::from_array([
        [1.5, -2.0, 0.5],
        [0.0, 3.0, -1.0],
        [0.0, 2.0, 0.0],
    ]));
    check("prod", &p, || weighted(p.trace().prod::<Axis<1>>()));
    let g = p
        .trace()
        .prod::<Axis<1>>()
        .sum_all()
        .backward()
        .get(&p)
        .to_vec();
    assert_eq!(g, [-1.0, 0.75, -3.0, -3.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let im = param::<Rank4<1, 2, 2, 3>, D>(122, -1.0, 1.0);
    check("upsample_nearest2d", &im, || {
        let up: Traced<f64, Rank4<1, 2, 4, 6>, D> = im.trace().upsample_nearest2d();
        weighted(up)
    });
}

fn indexing<D: AutogradDevice>() {
    let x = param::<Rank2<4, 3>, D>(80, -2.0, 2.0);
    // Repeated indices accumulate.
    let rows = Tensor::<u32, _, D>::from_array([3, 0, 3, 1, 3]);
    check("index_select", &x, || {
        weighted(x.trace().index_select::<Axis<0>, _, _>(&rows))
    });
    // Along the last axis, with a strided index vector (a column of a matrix: stride 2).
    let col = Tensor::<u32, _, D>::from_array([[2, 9], [0, 9], [2, 9], [1, 9]]).i((.., 0));
    check("index_select along axis 1, strided indices", &x, || {
        weighted(x.trace().index_select::<Axis<1>, _, _>(&col))
    });
    let idx = Tensor::<i64, _, D>::from_array([[2, 0], [1, 1], [0, 2], [2, 2]]);
    check("gather", &x, || {
        weighted(x.trace().gather::<Axis<1>, _, _>(&idx))
    });
    // scatter_add, repeated indices accumulating: with respect to the input and to the source.
    let src = param::<Rank2<4, 2>, D>(81, -2.0, 2.0);
    check("scatter_add: input", &x, || {
        weighted(x.trace().scatter_add::<Axis<1>, _, _, _>(&idx, &src))
    });
    check("scatter_add: source", &src, || {
        weighted(
            x.trace()
                .scatter_add::<Axis<1>, _, _, _>(&idx, &src.trace()),
        )
    });
    let rows = Tensor::<u32, _, D>::from_array([[3, 3, 0], [0, 3, 1]]);
    let src_rows = param::<Rank2<2, 3>, D>(82, -2.0, 2.0);
    check("scatter_add along axis 0: source", &src_rows, || {
        weighted(x.trace().scatter_add::<Axis<0>, _, _, _>(&rows, &src_rows))
    });
    let ids = Tensor::<u32, _, D>::from_array([[1, 3, 1], [0, 1, 2]]);
    check("embedding", &x, || weighted(x.trace().embedding(&ids)));
    // On a transposed table.
    let xt = Var::new(x.value().t().contiguous().t());
    check("embedding of a strided table", &xt, || {
        weighted(xt.trace().embedding(&ids))
    });
}

/// Cross entropy's gradient in dtype `T` with labels of type `I` (a strided column view), against the definition
/// `(softmax(x) - one_hot(label)) g` in f64 from the logits as rounded to `T`, within `tol` (relative).
fn cross_entropy_gradient_in<T: FloatDType, I: IndexDType, D: AutogradDevice>(tol: f64) {
    let logits: Tensor<f64, Rank2<3, 4>, D> = random::<f64, Rank2<3, 4>, D>(94).affine(6.0, -3.0);
    let x = Var::new(logits.to_dtype::<T>());
    let table = Tensor::<i64, _, D>::from_array([[9, 3], [9, 0], [9, 2]]).to_dtype::<I>();
    let labels = table.i((.., 1)); // [3, 0, 2], stride 2
    let xs = x.value().to_dtype::<f64>().to_vec();
    let want = |g: [f64; 3]| -> Vec<f64> {
        (0..12)
            .map(|i| {
                let (r, c) = (i / 4, i % 4);
                let row = &xs[r * 4..r * 4 + 4];
                let sum: f64 = row.iter().map(|v| v.exp()).sum();
                let label = [3, 0, 2][r];
                (row[c].exp() / sum - f64::from(u8::from(c == label))) * g[r]
            })
            .collect()
    };
    let weights = Tensor::<f64, _, D>::from_array([0.5, -2.0, 1.5]).to_dtype::<T>();
    for (what, grads, g) in [
        (
            "weighted rows",
            (x.trace().cross_entropy(&labels) * &weights)
                .sum_all()
                .backward(),
            [0.5, -2.0, 1.5],
        ),
        (
            "mean",
            x.trace().cross_entropy(&labels).mean_all().backward(),
            [1.0 / 3.0; 3],
        ),
    ] {
        let got = grads.get(&x).to_dtype::<f64>().to_vec();
        for (i, (got, want)) in got.iter().zip(want(g)).enumerate() {
            assert!(
                (got - want).abs() <= tol * (1.0 + want.abs()),
                "cross_entropy gradient in {:?} ({what}) [{i}]: {got} vs {want}",
                T::DTYPE
            );
        }
    }
}

fn losses<D: AutogradDevice>() {
    const B: usize = 4;
    const C: usize = 5;
    let logits = param::<Rank2<B, C>, D>(90, -3.0, 3.0);
    let labels = Tensor::<u32, _, D>::from_array([4, 0, 2, 4]);
    // Against the definition: -x[label] + ln(sum(exp(x))).
    let v = logits.value().to_vec();
    let lab = labels.to_vec();
    let want: Vec<f64> = (0..B)
        .map(|b| {
            let row = &v[b * C..(b + 1) * C];
            row.iter().map(|x| x.exp()).sum::<f64>().ln() - row[lab[b] as usize]
        })
        .collect();
    let got = logits.trace().cross_entropy(&labels).into_value().to_vec();
    assert_within("cross_entropy", &got, &want, 1e-12);
    check("cross_entropy", &logits, || {
        logits.trace().cross_entropy(&labels).mean_all()
    });
    // Its own backward rule: rows weighted differently, a label repeated, and logits read through a transpose.
    let weights = Tensor::<f64, _, D>::from_array([0.5, -2.0, 1.0, 3.0]);
    check("cross_entropy, weighted rows", &logits, || {
        (logits.trace().cross_entropy(&labels) * &weights).sum_all()
    });
    let columns = param::<Rank2<C, B>, D>(93, -3.0, 3.0);
    check("cross_entropy of a transposed view", &columns, || {
        (columns.trace().t().cross_entropy(&labels) * &weights).sum_all()
    });
    check("nll of log_softmax", &logits, || {
        logits
            .trace()
            .log_softmax::<Axis<1>>()
            .nll(&labels)
            .sum_all()
    });
    // The rule's one kernel in every float dtype and index type, labels read through a strided column, the rows'
    // gradients both distinct and one broadcast value (`mean_all`), against softmax - one_hot from the rounded
    // logits.
    cross_entropy_gradient_in::<f64, u32, D>(1e-12);
    cross_entropy_gradient_in::<f32, i64, D>(1e-6);
    cross_entropy_gradient_in::<f16, i32, D>(2e-3);
    cross_entropy_gradient_in::<bf16, u32, D>(1e-2);
    // Stable for huge logits.
    let big = Tensor::<f32, _, D>::from_array([[1000.0, 0.0]]);
    let l = Traced::constant(big).cross_entropy(&Tensor::<u32, _, D>::from_array([1]));
    assert_eq!(l.into_value().to_vec(), [1000.0]);

    // mse: against (p - t)^2, both sides differentiable.
    let p = param::<Rank2<B, C>, D>(91, -2.0, 2.0);
    let t = param::<Rank2<B, C>, D>(92, -2.0, 2.0);
    let got = p.trace().mse(&t).into_value().to_vec();
    let (pv, tv) = (p.value().to_vec(), t.value().to_vec());
    let want: Vec<f64> = pv.iter().zip(&tv).map(|(a, b)| (a - b) * (a - b)).collect();
    assert_within("mse", &got, &want, 1e-15);
    check("mse: prediction", &p, || p.trace().mse(&t).mean_all());
    check("mse: target", &t, || p.trace().mse(&t).mean_all());

    // bce_with_logits: against -(y ln s + (1 - y) ln(1 - s)), s = sigmoid(x).
    let y: Tensor<f64, Rank2<B, C>, D> = random::<f64, Rank2<B, C>, D>(93).affine(0.5, 0.5);
    let got = p.trace().bce_with_logits(&y).into_value().to_vec();
    let yv = y.to_vec();
    let want: Vec<f64> = pv
        .iter()
        .zip(&yv)
        .map(|(&x, &t)| {
            let s = 1.0 / (1.0 + (-x).exp());
            -(t * s.ln() + (1.0 - t) * (1.0 - s).ln())
        })
        .collect();
    assert_within("bce_with_logits", &got, &want, 1e-12);
    check("bce_with_logits", &p, || {
        p.trace().bce_with_logits(&y).mean_all()
    });
    // Soft targets trained on (distillation): the gradient with respect to the targets too, both traced.
    let soft = Var::new(y.clone());
    check("bce_with_logits: targets", &soft, || {
        p.trace().bce_with_logits(&soft.trace()).mean_all()
    });
    check("bce_with_logits: logits, traced targets", &p, || {
        p.trace().bce_with_logits(&soft).mean_all()
    });
}

/// candle's example: y = x^2 + 5x + 4 at x = [3, 1, 4] gives dy/dx = 2x + 5 = [11, 7, 13].
fn known_values<D: AutogradDevice>() {
    let x = Var::new(Tensor::<f32, _, D>::from_array([3., 1., 4.]));
    let xt = x.trace();
    let y = &(&xt * &xt) + &(&xt * 5.0) + 4.0;
    assert_eq!(y.value().to_vec(), [28., 10., 40.]);
    let grads = y.sum_all().backward();
    assert_eq!(grads.get(&x).to_array(), [11., 7., 13.]);
    // The same in every float dtype.
    let h = Var::new(Tensor::<bf16, _, D>::from_array(
        [3., 1., 4.].map(bf16::from_f32),
    ));
    let ht = h.trace();
    let g = (&(&ht * &ht) + &(&ht * bf16::from_f32(5.0)))
        .sum_all()
        .backward()
        .get(&h);
    assert_eq!(g.to_vec(), [11., 7., 13.].map(bf16::from_f32));
    // softmax rows sum to 1 whatever the input, so their gradient through a plain sum is 0.
    let s = Var::new(Tensor::<f64, Rank2<2, 3>, D>::randn(3));
    let g = s.trace().softmax::<Axis<1>>().sum_all().backward().get(&s);
    assert!(g.to_vec().iter().all(|v| v.abs() < 1e-12), "{g}");
}

fn bookkeeping<D: AutogradDevice>() {
    let w = Var::new(Tensor::<f32, Rank1<2>, D>::from_array([1., 2.]));
    let unused = Var::new(Tensor::<f32, Rank1<2>, D>::ones());
    // Two traces of one parameter (weight tying) accumulate into one gradient; a constant gets none.
    let c = Traced::constant(Tensor::<f32, Rank1<2>, D>::full(3.0));
    let loss = (&(&w.trace() * &c) + &w.trace()).sum_all();
    assert!(loss.requires_grad());
    let grads: Gradients = loss.backward();
    assert_eq!(grads.get(&w).to_vec(), [4., 4.]);
    assert_eq!(grads.len(), 1);
    assert!(grads.try_get(&unused).is_none());
    assert_eq!(
        grads.get(&unused).to_vec(),
        [0., 0.],
        "zeros when the loss does not depend on it"
    );
    // Only constants: nothing is recorded, backward gives no gradients.
    let k = (c.clone() * 2.0).sum_all();
    assert!(!k.requires_grad());
    assert!(k.backward().is_empty());
    // detach stops the gradient.
    let d = (&w.trace().detach() * &w.trace()).sum_all().backward();
    assert_eq!(d.get(&w).to_vec(), [1., 2.]);
    // An update through the cell.
    let g = (&w.trace() * &w.trace()).sum_all().backward().get(&w);
    w.update(|v| *v -= &(&g * 0.5));
    assert_eq!(w.value().to_vec(), [0., 0.]);
}

/// Once a step's graph is gone (backward consumed it), the parameter's buffer is written in place.
#[test]
fn cpu_parameter_updates_reuse_the_buffer() {
    // 32 elements: a heap buffer (small ones live inline in the tensor, where no pointer is stable).
    let w = Var::new(Tensor::<f32, Rank1<32>, Cpu>::full(2.0));
    let before = w.value().storage().as_ptr();
    let g = (&w.trace() * &w.trace()).sum_all().backward().get(&w);
    w.update(|v| *v -= &(&g * 0.5));
    assert_eq!(w.value().to_vec(), [0.; 32]);
    assert_eq!(w.value().storage().as_ptr(), before);
}

/// The optimizers' steps write the parameter's own buffer too (the cell holds the value in the padded form the
/// updates compute in, so no copy is made on the way).
#[test]
fn cpu_optimizer_steps_reuse_the_buffer() {
    use typed_tensor::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
    let w = Var::new(Tensor::<f32, Rank2<4, 8>, Cpu>::full(2.0));
    let before = w.value().storage().as_ptr();
    let mut sgd = Sgd::new(&w, SgdConfig::default());
    let mut adam = Adam::new(&w, AdamConfig::default());
    // Each gradient in its own statement: the traced values (views of the parameter's buffer) are gone before the
    // step, as in a training loop (inside one statement they would live until its end and share the buffer).
    for _ in 0..2 {
        let grads = (&w.trace() * &w.trace()).sum_all().backward();
        sgd.step(&grads);
        assert_eq!(w.value().storage().as_ptr(), before, "SGD");
        let grads = (&w.trace() * &w.trace()).sum_all().backward();
        adam.step(&grads);
        assert_eq!(w.value().storage().as_ptr(), before, "Adam");
    }
    // Two SGD steps of lr 0.01 on w^2 (w -= 0.02 w), each followed by an Adam step, whose first steps move
    // every element by lr (1e-3) against the gradient's sign.
    let want = ((2.0f32 * 0.98 - 1e-3) * 0.98) - 1e-3;
    assert!(w.value().to_vec().iter().all(|&x| (x - want).abs() < 1e-6));
}

/// A panic inside `update` leaves the parameter readable, holding what the closure had written before it
/// panicked (as a poisoned lock would).
#[test]
fn a_panicking_update_keeps_the_value() {
    let w = Var::new(Tensor::<f32, Rank1<3>, Cpu>::ones());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        w.update(|v| {
            *v += 1.0;
            panic!("boom")
        })
    }));
    assert!(r.is_err());
    assert_eq!(w.value().to_vec(), [2., 2., 2.]);
    w.update(|v| *v *= 2.0);
    assert_eq!(w.value().to_vec(), [4., 4., 4.]);
}

/// A value whose graph an earlier backward consumed cannot be differentiated again.
#[test]
#[should_panic(expected = "already used")]
fn second_backward_through_a_used_graph_panics() {
    let w = Var::new(Tensor::<f32, Rank1<2>, Cpu>::ones());
    let h = w.trace().exp();
    let a = h.sum_all();
    let b = h.mean_all();
    let _ = a.backward();
    let _ = b.backward();
}

device_tests! {
    unary_ops_match_finite_differences => unary_ops;
    binary_ops_with_broadcasting_match_finite_differences => binary_ops;
    matmul_forms_match_finite_differences => matmuls;
    reductions_match_finite_differences => reductions;
    views_and_softmax_match_finite_differences => views_and_lanes;
    known_values_every_float_dtype => known_values;
    indexing_matches_finite_differences => indexing;
    rearrangements_where_gelu_erf_and_prod_match_finite_differences => rearrangements;
    convolutions_and_pooling_match_finite_differences => convolutions;
    joins_casts_and_norms_match_finite_differences => joins_casts_and_norms;
    losses_match_definitions_and_finite_differences => losses;
    shared_parameters_constants_and_in_place_updates => bookkeeping;
    scans_match_finite_differences => scans;
    masks_match_finite_differences => masking;
}

/// A traced median of a lane holding NaN is that NaN, and its gradient goes to the NaN's position (PyTorch's).
#[test]
fn median_gradient_goes_to_the_picked_position() {
    let x = Var::new(Tensor::<f64, _, Cpu>::from_array([
        [1., f64::NAN, 3.],
        [4., 2., 6.],
    ]));
    let (m, at) = x.trace().median::<Axis<1>>();
    let values = m.value().to_vec();
    assert!(values[0].is_nan() && values[1] == 4.0);
    assert_eq!(at.to_array(), [1, 0]);
    let g = m.sum_all().backward().get(&x);
    assert_eq!(g.to_array(), [[0., 1., 0.], [1., 0., 0.]]);
}

/// Gradients that arrive in pieces (a split's parts, narrows, a sequence read step by step) are joined when the
/// source's gradient is read: pieces used twice, overlapping narrows, pieces along two axes of one source, a
/// source that is an op's result and one that is a parameter, mixed with a whole-tensor use; against finite
/// differences.
#[test]
fn gradients_in_pieces_are_joined() {
    let x = Var::new(
        Tensor::<f64, Rank2<4, 6>, Cpu>::from_vec(
            (0..24).map(|i| (i as f64 * 0.37).sin()).collect(),
        )
        .unwrap(),
    );
    let loss = || {
        let t = x.trace();
        let doubled = &t * 2.0; // an op's result, split below
        let [a, b, c] = doubled.split::<Axis<1>, 2, 3>();
        let steps = t.split::<Axis<0>, 1, 4>(); // the same source along another axis
        let left = t.narrow::<Axis<1>, 0, 4>();
        let right = t.narrow::<Axis<1>, 2, 4>(); // overlaps `left`
        (a.clone() * &a).sum_all()
            + (b * 3.0).sum_all()
            + a.sum_all()
            + c.tanh().sum_all()
            + (steps[1].clone() * &steps[3]).sum_all()
            + steps[1].sum_all()
            + (left * &right).sum_all()
            + t.exp().sum_all() // the whole source too
    };
    let worst = check_gradient(&x, 1e-5, loss);
    assert!(worst.error < 1e-7, "{worst:?}");
}

/// A long sequence read one step at a time through `split` (each step's gradient a piece, joined once): every
/// step's gradient lands in its place (each step's weight is its index).
#[test]
fn a_sequence_read_step_by_step() {
    const L: usize = 64;
    let x = Var::new(Tensor::<f64, Rank3<2, L, 3>, Cpu>::ones());
    let steps = x.trace().split::<Axis<1>, 1, L>();
    let loss = steps
        .iter()
        .enumerate()
        .map(|(t, s)| (s * t as f64).sum_all())
        .reduce(|a, b| a + b)
        .unwrap();
    let g = loss.backward().get(&x).to_vec();
    for (i, v) in g.iter().enumerate() {
        assert_eq!(*v, ((i / 3) % L) as f64, "element {i}");
    }
}
