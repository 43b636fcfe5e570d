//! The LSTM and GRU cells against naive loops written from PyTorch's equations (gate orders i, f, g, o and r, z,
//! n with `r` on `W_hn h + b_hn`), with and without biases, a strided input, a runtime batch, f32 and f64; their
//! gradients with respect to every input and weight by finite differences.

use crate::common::*;
use typed_tensor::autograd::{check_gradient, Traced, Var};
use typed_tensor::prelude::*;

const B: usize = 3;
const I: usize = 4;
const H: usize = 5;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `x W^T + b` for row-major `x (B, cols)` and `w (rows, cols)`.
fn affine(x: &[f64], w: &[f64], b: Option<&[f64]>, cols: usize) -> Vec<f64> {
    let rows = w.len() / cols;
    (0..B * rows)
        .map(|k| {
            let (r, g) = (k / rows, k % rows);
            (0..cols)
                .map(|c| x[r * cols + c] * w[g * cols + c])
                .sum::<f64>()
                + b.map_or(0.0, |b| b[g])
        })
        .collect()
}

type Weights<'a> = (&'a [f64], &'a [f64], Option<&'a [f64]>, Option<&'a [f64]>);

fn naive_lstm(
    x: &[f64],
    h: &[f64],
    c: &[f64],
    (wi, wh, bi, bh): Weights<'_>,
) -> (Vec<f64>, Vec<f64>) {
    let (gx, gh) = (affine(x, wi, bi, I), affine(h, wh, bh, H));
    let (mut h2, mut c2) = (vec![0.0; B * H], vec![0.0; B * H]);
    for r in 0..B {
        for j in 0..H {
            let gate = |q: usize| gx[r * 4 * H + q * H + j] + gh[r * 4 * H + q * H + j];
            let (i, f, g, o) = (
                sigmoid(gate(0)),
                sigmoid(gate(1)),
                gate(2).tanh(),
                sigmoid(gate(3)),
            );
            c2[r * H + j] = f * c[r * H + j] + i * g;
            h2[r * H + j] = o * c2[r * H + j].tanh();
        }
    }
    (h2, c2)
}

fn naive_gru(x: &[f64], h: &[f64], (wi, wh, bi, bh): Weights<'_>) -> Vec<f64> {
    let (gx, gh) = (affine(x, wi, bi, I), affine(h, wh, bh, H));
    (0..B * H)
        .map(|k| {
            let (r_, j) = (k / H, k % H);
            let at = |g: &[f64], q: usize| g[r_ * 3 * H + q * H + j];
            let r = sigmoid(at(&gx, 0) + at(&gh, 0));
            let z = sigmoid(at(&gx, 1) + at(&gh, 1));
            let n = (at(&gx, 2) + r * at(&gh, 2)).tanh();
            (1.0 - z) * n + z * h[k]
        })
        .collect()
}

fn cells<T: FloatDType, D: Device>() {
    let tol = if T::DTYPE == DType::F32 { 1e-5 } else { 1e-12 };
    let x = random::<T, Rank2<I, B>, D>(80).t(); // (B, I), strided
    let (h, c) = (
        random::<T, Rank2<B, H>, D>(81),
        random::<T, Rank2<B, H>, D>(82),
    );
    let f = |t: Vec<T>| -> Vec<f64> { t.iter().map(|v| v.to_f64()).collect() };
    let (xs, hs, cs) = (f(x.to_vec()), f(h.to_vec()), f(c.to_vec()));
    let (wi, wh) = (
        random::<T, Rank2<20, I>, D>(83),
        random::<T, Rank2<20, H>, D>(84),
    );
    let (bi, bh) = (random::<T, Rank1<20>, D>(85), random::<T, Rank1<20>, D>(86));
    let (wis, whs, bis, bhs) = (
        f(wi.to_vec()),
        f(wh.to_vec()),
        f(bi.to_vec()),
        f(bh.to_vec()),
    );
    let (h2, c2) = x.lstm_cell((&h, &c), &wi, &wh, Some(&bi), Some(&bh));
    let (wh2, wc2) = naive_lstm(&xs, &hs, &cs, (&wis, &whs, Some(&bis), Some(&bhs)));
    assert_within("lstm h'", &h2.to_vec(), &wh2, tol);
    assert_within("lstm c'", &c2.to_vec(), &wc2, tol);
    let (h2, _) = x.lstm_cell((&h, &c), &wi, &wh, None, None);
    assert_within(
        "lstm without biases",
        &h2.to_vec(),
        &naive_lstm(&xs, &hs, &cs, (&wis, &whs, None, None)).0,
        tol,
    );

    let (wi, wh) = (
        random::<T, Rank2<15, I>, D>(87),
        random::<T, Rank2<15, H>, D>(88),
    );
    let (bi, bh) = (random::<T, Rank1<15>, D>(89), random::<T, Rank1<15>, D>(90));
    let (wis, whs, bis, bhs) = (
        f(wi.to_vec()),
        f(wh.to_vec()),
        f(bi.to_vec()),
        f(bh.to_vec()),
    );
    let got = x.gru_cell(&h, &wi, &wh, Some(&bi), Some(&bh));
    assert_within(
        "gru h'",
        &got.to_vec(),
        &naive_gru(&xs, &hs, (&wis, &whs, Some(&bis), Some(&bhs))),
        tol,
    );
    let got = x.gru_cell(&h, &wi, &wh, None, Some(&bh));
    assert_within(
        "gru, one bias",
        &got.to_vec(),
        &naive_gru(&xs, &hs, (&wis, &whs, None, Some(&bhs))),
        tol,
    );
}

fn cells_f32<D: Device>() {
    cells::<f32, D>()
}
fn cells_f64<D: Device>() {
    cells::<f64, D>()
}

device_tests! {
    cells_f32 => cells_f32;
    cells_f64 => cells_f64;
}

/// A runtime batch gives what the static one gives.
#[test]
fn cells_take_a_runtime_batch() {
    let x: Tensor<f32, Rank2<B, I>, Cpu> = random(91);
    let h: Tensor<f32, Rank2<B, H>, Cpu> = random(92);
    let (wi, wh) = (
        random::<f32, Rank2<15, I>, Cpu>(93),
        random::<f32, Rank2<15, H>, Cpu>(94),
    );
    let xr = x.reshape_with_shape((B, Const::<I>));
    let hr = h.reshape_with_shape((B, Const::<H>));
    assert_eq!(
        xr.gru_cell(&hr, &wi, &wh, None, None).to_vec(),
        x.gru_cell(&h, &wi, &wh, None, None).to_vec()
    );
}

/// Gradients of the input, the states, the weights and the biases, by central finite differences.
#[test]
fn cell_gradients_match_finite_differences() {
    let x = Var::new(random::<f64, Rank2<B, I>, Cpu>(95));
    let h = Var::new(random::<f64, Rank2<B, H>, Cpu>(96));
    let c = Var::new(random::<f64, Rank2<B, H>, Cpu>(97));
    let (wi, wh) = (
        Var::new(random::<f64, Rank2<20, I>, Cpu>(98)),
        Var::new(random::<f64, Rank2<20, H>, Cpu>(99)),
    );
    let (bi, bh) = (
        Var::new(random::<f64, Rank1<20>, Cpu>(100)),
        Var::new(random::<f64, Rank1<20>, Cpu>(101)),
    );
    let probe: Tensor<f64, Rank2<B, H>, Cpu> = random(102);
    let loss = || {
        let (h2, c2) = x.trace().lstm_cell(
            (&h.trace(), &c.trace()),
            &wi.trace(),
            &wh.trace(),
            Some(&bi.trace()),
            Some(&bh.trace()),
        );
        (h2 * &probe).sum_all() + (c2.sqr() * 0.5).sum_all()
    };
    for check in [
        check_gradient(&x, 1e-5, loss),
        check_gradient(&h, 1e-5, loss),
        check_gradient(&c, 1e-5, loss),
        check_gradient(&wi, 1e-5, loss),
        check_gradient(&wh, 1e-5, loss),
        check_gradient(&bi, 1e-5, loss),
        check_gradient(&bh, 1e-5, loss),
    ] {
        assert!(check.error < 1e-8, "lstm: {check:?}");
    }
    let (gi, gh) = (
        Var::new(random::<f64, Rank2<15, I>, Cpu>(103)),
        Var::new(random::<f64, Rank2<15, H>, Cpu>(104)),
    );
    let gb = Var::new(random::<f64, Rank1<15>, Cpu>(105));
    let loss = || {
        (x.trace().gru_cell(
            &h.trace(),
            &gi.trace(),
            &gh.trace(),
            None,
            Some(&gb.trace()),
        ) * &probe)
            .sum_all()
    };
    for check in [
        check_gradient(&x, 1e-5, loss),
        check_gradient(&h, 1e-5, loss),
        check_gradient(&gi, 1e-5, loss),
        check_gradient(&gh, 1e-5, loss),
        check_gradient(&gb, 1e-5, loss),
    ] {
        assert!(check.error < 1e-8, "gru: {check:?}");
    }
}

/// The layers' pass over a sequence is the cells' recurrence from the initial state: each step against the naive
/// cell fed the previous step's state; gradients through time by finite differences.
#[test]
fn sequences_run_the_cells_through_time() {
    const L: usize = 4;
    let x: Tensor<f64, Rank3<B, L, I>, Cpu> = random(110);
    let (h0, c0) = (
        random::<f64, Rank2<B, H>, Cpu>(111),
        random::<f64, Rank2<B, H>, Cpu>(112),
    );
    let (wi, wh) = (
        random::<f64, Rank2<20, I>, Cpu>(113),
        random::<f64, Rank2<20, H>, Cpu>(114),
    );
    let bi = random::<f64, Rank1<20>, Cpu>(115);
    let (ys, (h, c)) = x.lstm((&h0, &c0), &wi, &wh, Some(&bi), None);
    let (wis, whs, bis) = (wi.to_vec(), wh.to_vec(), bi.to_vec());
    let (mut hs, mut cs) = (h0.to_vec(), c0.to_vec());
    let ys = ys.to_vec();
    for t in 0..L {
        let xt = x.i((.., t)).to_vec();
        (hs, cs) = naive_lstm(&xt, &hs, &cs, (&wis, &whs, Some(&bis), None));
        let got: Vec<f64> = (0..B)
            .flat_map(|b| ys[(b * L + t) * H..][..H].to_vec())
            .collect();
        assert_within(&format!("lstm step {t}"), &got, &hs, 1e-12);
    }
    assert_within("lstm final h", &h.to_vec(), &hs, 1e-12);
    assert_within("lstm final c", &c.to_vec(), &cs, 1e-12);

    let (gi, gh) = (
        random::<f64, Rank2<15, I>, Cpu>(116),
        random::<f64, Rank2<15, H>, Cpu>(117),
    );
    let gb = random::<f64, Rank1<15>, Cpu>(118);
    let (ys, h) = x.gru(&h0, &gi, &gh, None, Some(&gb));
    let (gis, ghs, gbs) = (gi.to_vec(), gh.to_vec(), gb.to_vec());
    let mut hs = h0.to_vec();
    let ys = ys.to_vec();
    for t in 0..L {
        hs = naive_gru(&x.i((.., t)).to_vec(), &hs, (&gis, &ghs, None, Some(&gbs)));
        let got: Vec<f64> = (0..B)
            .flat_map(|b| ys[(b * L + t) * H..][..H].to_vec())
            .collect();
        assert_within(&format!("gru step {t}"), &got, &hs, 1e-12);
    }
    assert_within("gru final h", &h.to_vec(), &hs, 1e-12);

    // Backward through time.
    let xv = Var::new(x);
    let (wiv, whv) = (Var::new(wi), Var::new(wh));
    let probe: Tensor<f64, Rank3<B, L, H>, Cpu> = random(119);
    let loss = || {
        let (ys, (h, _)) = xv.trace().lstm(
            (&Traced::constant(h0.clone()), &Traced::constant(c0.clone())),
            &wiv.trace(),
            &whv.trace(),
            None,
            None,
        );
        (ys * &probe).sum_all() + h.sqr().sum_all()
    };
    for check in [
        check_gradient(&xv, 1e-5, loss),
        check_gradient(&wiv, 1e-5, loss),
        check_gradient(&whv, 1e-5, loss),
    ] {
        assert!(check.error < 1e-8, "lstm through time: {check:?}");
    }
    let (giv, ghv) = (Var::new(gi), Var::new(gh));
    let loss = || {
        (xv.trace()
            .gru(
                &Traced::constant(h0.clone()),
                &giv.trace(),
                &ghv.trace(),
                None,
                None,
            )
            .0
            * &probe)
            .sum_all()
    };
    for check in [
        check_gradient(&xv, 1e-5, loss),
        check_gradient(&giv, 1e-5, loss),
        check_gradient(&ghv, 1e-5, loss),
    ] {
        assert!(check.error < 1e-8, "gru through time: {check:?}");
    }
}
