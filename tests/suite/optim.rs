//! Optimizers against reference loops of PyTorch's update rules (f64, several steps), multi-parameter models,
//! learning-rate schedules, and in-place parameter updates.

use crate::common::*;
use typed_tensor::autograd::Var;
use typed_tensor::optim::{Adam, AdamConfig, AdamW, Optimizer, Sgd, SgdConfig};
use typed_tensor::prelude::*;

/// The reference rules, on one f64 value at a time, written from PyTorch's documentation.
#[derive(Clone, Copy)]
enum Rule {
    Sgd(SgdConfig),
    Adam(AdamConfig),
    AdamW(AdamConfig),
}

fn reference(rule: Rule, w0: &[f64], steps: usize, grad: impl Fn(f64) -> f64) -> Vec<f64> {
    w0.iter()
        .map(|&w0| {
            let (mut w, mut v, mut m, mut s) = (w0, None::<f64>, 0.0, 0.0);
            for t in 1..=steps {
                let mut g = grad(w);
                match rule {
                    Rule::Sgd(c) => {
                        g += c.weight_decay * w;
                        let mut d = g;
                        if c.momentum != 0.0 {
                            let b = match v {
                                None => g,
                                Some(b) => c.momentum * b + g,
                            };
                            v = Some(b);
                            d = if c.nesterov { g + c.momentum * b } else { b };
                        }
                        w -= c.lr * d;
                    }
                    Rule::Adam(c) | Rule::AdamW(c) => {
                        if let Rule::AdamW(_) = rule {
                            w *= 1.0 - c.lr * c.weight_decay;
                        } else {
                            g += c.weight_decay * w;
                        }
                        m = c.beta1 * m + (1.0 - c.beta1) * g;
                        s = c.beta2 * s + (1.0 - c.beta2) * g * g;
                        let mh = m / (1.0 - c.beta1.powi(t as i32));
                        let sh = s / (1.0 - c.beta2.powi(t as i32));
                        w -= c.lr * mh / (sh.sqrt() + c.eps);
                    }
                }
            }
            w
        })
        .collect()
}

fn optimizer_for<D: Device>(
    rule: Rule,
    params: &(Var<f64, Rank2<3, 4>, D>, Var<f32, Rank1<2>, D>),
) -> Box<dyn Optimizer> {
    match rule {
        Rule::Sgd(c) => Box::new(Sgd::new(params, c)),
        Rule::Adam(c) => Box::new(Adam::new(params, c)),
        Rule::AdamW(c) => Box::new(AdamW::new(params, c)),
    }
}

#[test]
fn updates_match_reference_rules() {
    let sgd = SgdConfig {
        lr: 0.1,
        ..Default::default()
    };
    let adam = AdamConfig {
        lr: 0.05,
        ..Default::default()
    };
    let rules = [
        ("sgd", Rule::Sgd(sgd)),
        (
            "sgd momentum",
            Rule::Sgd(SgdConfig {
                momentum: 0.9,
                ..sgd
            }),
        ),
        (
            "sgd nesterov + decay",
            Rule::Sgd(SgdConfig {
                momentum: 0.8,
                nesterov: true,
                weight_decay: 0.1,
                ..sgd
            }),
        ),
        ("adam", Rule::Adam(adam)),
        (
            "adam + l2",
            Rule::Adam(AdamConfig {
                weight_decay: 0.1,
                ..adam
            }),
        ),
        (
            "adamw",
            Rule::AdamW(AdamConfig {
                weight_decay: 0.1,
                ..adam
            }),
        ),
    ];
    for (name, rule) in rules {
        let w: Tensor<f64, Rank2<3, 4>, Cpu> = random(1);
        let u = Tensor::<f32, _, Cpu>::from_array([0.5, -2.0]);
        let (w0, u0) = (w.to_vec(), u.to_vec());
        let params = (Var::new(w), Var::new(u));
        let mut opt = optimizer_for(rule, &params);
        let before = params.0.value().storage().as_ptr();
        for _ in 0..5 {
            // loss_w = sum(w^3 / 3), loss_u = sum(u^2): gradients w^2 and 2u. The traced values are dropped
            // before each step (here by the block), so the parameters' buffers are free to update in place.
            let (loss_w, loss_u) = {
                let (w, u) = (params.0.trace(), params.1.trace());
                ((&w * &w * &w * (1.0 / 3.0)).sum_all(), (&u * &u).sum_all())
            };
            opt.step(&loss_w.backward());
            opt.step(&loss_u.backward()); // a set without w's gradient leaves w alone
        }
        // Both sets count as optimizer steps, which Adam's bias correction sees; SGD has no step count, so
        // its parameters follow the reference exactly. Adam is compared in the next loop.
        if let Rule::Sgd(_) = rule {
            let want_w = reference(rule, &w0, 5, |w| w * w);
            assert_within(name, &params.0.value().to_vec(), &want_w, 1e-12);
            let u0: Vec<f64> = u0.iter().map(|&x| x as f64).collect();
            let want_u = reference(rule, &u0, 5, |u| 2.0 * u);
            assert_within(name, &params.1.value().to_vec(), &want_u, 1e-6);
        }
        assert_eq!(
            params.0.value().storage().as_ptr(),
            before,
            "{name}: w was reallocated"
        );
    }
}

/// Adam's bias correction counts optimizer steps: one gradient set per step. Fused (the device kernel writes the
/// unshared buffers in place) and composed from tensor ops (another handle shares the parameter during each step,
/// so the kernel declines): both follow the reference, on every device.
fn adam_rules_follow_the_reference<D: AutogradDevice>() {
    let adam = AdamConfig {
        lr: 0.05,
        ..Default::default()
    };
    for (name, rule) in [
        ("adam", Rule::Adam(adam)),
        (
            "adam + l2",
            Rule::Adam(AdamConfig {
                weight_decay: 0.1,
                ..adam
            }),
        ),
        (
            "adamw",
            Rule::AdamW(AdamConfig {
                weight_decay: 0.1,
                ..adam
            }),
        ),
    ] {
        let w0: Tensor<f64, Rank2<3, 4>, D> = random(2);
        let want_w = reference(rule, &w0.to_vec(), 5, |w| w * w);
        for hold_a_handle in [false, true] {
            let u = Tensor::<f32, _, D>::from_array([0.5, -2.0]);
            let params = (Var::new(w0.clone() + 0.0), Var::new(u.clone()));
            let mut opt = optimizer_for(rule, &params);
            for _ in 0..5 {
                let loss = {
                    let w = params.0.trace();
                    (&w * &w * &w * (1.0 / 3.0)).sum_all()
                };
                let held = hold_a_handle.then(|| params.0.value());
                opt.step(&loss.backward());
                drop(held);
            }
            let what = format!("{name} (handle held: {hold_a_handle})");
            assert_within(&what, &params.0.value().to_vec(), &want_w, 1e-12);
            assert_eq!(
                params.1.value().to_vec(),
                u.to_vec(),
                "{what}: a parameter without gradient moved"
            );
        }
    }
}

/// A weight two layers share (a language model's tied embedding and output head) is one parameter: its gradient
/// sums both uses, and every optimizer steps it once, exactly as it steps one untied weight with that gradient
/// (it was stepped twice: SGD with lr 0.1 and gradient 2 moved it from 1 to 0.6).
fn tied_weights_step_once<D: AutogradDevice>() {
    let config = AdamConfig {
        lr: 0.1,
        weight_decay: 0.5,
        ..Default::default()
    };
    type Make<D> =
        fn(&(Var<f32, Rank1<2>, D>, Var<f32, Rank1<2>, D>), AdamConfig) -> Box<dyn Optimizer>;
    let optimizers: [(&str, Make<D>); 4] = [
        ("sgd", |m, c| {
            Box::new(Sgd::new(
                m,
                SgdConfig {
                    lr: c.lr,
                    ..Default::default()
                },
            ))
        }),
        ("sgd with momentum", |m, c| {
            Box::new(Sgd::new(
                m,
                SgdConfig {
                    lr: c.lr,
                    momentum: 0.9,
                    ..Default::default()
                },
            ))
        }),
        ("adam", |m, c| Box::new(Adam::new(m, c))),
        ("adamw", |m, c| Box::new(AdamW::new(m, c))),
    ];
    for (what, make) in optimizers {
        let tied = Var::new(Tensor::<f32, Rank1<2>, D>::ones());
        let model = (tied.clone(), tied.clone());
        let single = Var::new(Tensor::<f32, Rank1<2>, D>::ones());
        let alone = (single.clone(), Var::new(Tensor::<f32, Rank1<2>, D>::ones()));
        let (mut opt_tied, mut opt_single) = (make(&model, config), make(&alone, config));
        for _ in 0..3 {
            let grads = (model.0.trace().sum_all() + model.1.trace().sum_all()).backward();
            assert_eq!(
                grads.get(&tied).to_vec(),
                [2.0, 2.0],
                "{what}: the gradient sums both uses"
            );
            opt_tied.step(&grads);
            opt_single.step(&(single.trace() * 2.0).sum_all().backward());
        }
        assert_eq!(tied.value().to_vec(), single.value().to_vec(), "{what}");
    }
    let w = Var::new(Tensor::<f32, Rank1<1>, D>::ones());
    let mut sgd = Sgd::new(
        &(w.clone(), w.clone()),
        SgdConfig {
            lr: 0.1,
            ..Default::default()
        },
    );
    sgd.step(&(w.trace().sum_all() + w.trace().sum_all()).backward());
    assert!(
        (w.value().to_vec()[0] - 0.8).abs() < 1e-6,
        "the issue's case"
    );
}

device_tests! {
    adam_fused_and_composed_follow_the_reference => adam_rules_follow_the_reference;
    tied_weights_are_stepped_once => tied_weights_step_once;
}

/// Adam's first step moves every weight by `lr` against the sign of its gradient (m_hat = g, v_hat = g^2).
#[test]
fn adam_first_step_is_lr_times_sign() {
    let w = Var::new(Tensor::<f32, _, Cpu>::from_array([1.0, -3.0, 0.25]));
    let mut opt = Adam::new(
        &w,
        AdamConfig {
            lr: 0.1,
            ..Default::default()
        },
    );
    let c = Tensor::<f32, _, Cpu>::from_array([2.0, 5.0, -0.5]);
    opt.step(&(w.trace() * &c).sum_all().backward());
    let got = w.value().to_vec();
    for (g, want) in got.iter().zip([0.9, -3.1, 0.35]) {
        assert!((g - want).abs() < 1e-6, "{got:?}");
    }
}

#[test]
fn schedule_sets_the_learning_rate_per_step() {
    let w = Var::new(Tensor::<f64, Rank1<1>, Cpu>::zeros());
    let mut opt = Sgd::new(&w, SgdConfig::default()).with_schedule(|step| [1.0, 0.5, 0.25][step]);
    for _ in 0..3 {
        opt.step(&w.trace().sum_all().backward()); // gradient 1
    }
    assert_eq!(w.value().to_vec(), [-1.75]);
    assert_eq!(opt.learning_rate(), 0.25);
}
