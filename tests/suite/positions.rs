//! Position encodings against naive loops written from their definitions: the sinusoidal table; rotary
//! embeddings in both layouts (rotate-half and interleaved) on strided queries, with an offset, at runtime
//! lengths, in every float dtype; the error past the tables; gradients by finite differences.

use crate::common::*;
use typed_tensor::autograd::{check_gradient, Var};
use typed_tensor::nn::{sinusoidal_positions, sinusoidal_positions_with_shape, Rotary};
use typed_tensor::prelude::*;

const DH: usize = 6;
const BASE: f64 = 10000.0;

/// Rotary embedding of rows of width `DH` at positions `offset + l` (rows `(.., l, ..)` of `len` positions).
fn rotated(x: &[f64], len: usize, offset: usize, interleaved: bool) -> Vec<f64> {
    let half = DH / 2;
    (0..x.len())
        .map(|k| {
            let (row, c) = (k / DH, k % DH);
            let p = (offset + row % len) as f64;
            let i = if interleaved { c / 2 } else { c % half };
            let theta = p * BASE.powf(-2.0 * i as f64 / DH as f64);
            let (partner, sign) = match (interleaved, c) {
                (true, c) if c % 2 == 0 => (c + 1, -1.0),
                (true, c) => (c - 1, 1.0),
                (false, c) if c < half => (c + half, -1.0),
                (false, c) => (c - half, 1.0),
            };
            x[k] * theta.cos() + sign * x[row * DH + partner] * theta.sin()
        })
        .collect()
}

fn rotary_values<T: FloatDType, D: Device>() {
    let tol = match T::DTYPE {
        DType::BF16 => 3e-2,
        DType::F16 => 5e-3,
        DType::F32 => 1e-5,
        _ => 1e-12,
    };
    // (2, 3, 4, 6) queries as a strided view of a (2, 3, 6, 4) buffer.
    let x = random::<T, Rank4<2, 3, DH, 4>, D>(50).transpose::<FromEnd<2>, Last>();
    let xs: Vec<f64> = x.to_vec().iter().map(|v| v.to_f64()).collect();
    for interleaved in [false, true] {
        let rope = if interleaved {
            Rotary::<T, DH, D>::interleaved(8, BASE)
        } else {
            Rotary::<T, DH, D>::rotate_half(8, BASE)
        };
        assert_eq!(rope.max_len(), 8);
        for offset in [0, 2, 4] {
            let what = format!(
                "rotary interleaved {interleaved} offset {offset} [{}]",
                T::DTYPE
            );
            let got = x.rotary(&rope, offset).to_vec();
            assert_within(&what, &got, &rotated(&xs, 4, offset, interleaved), tol);
        }
        // Positions past the tables: 5 + 4 > 8.
        let err = x.try_rotary(&rope, 5).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rotary: takes 9 elements along axis 0, which has 8"
        );
    }
}

fn rotary_values_f32<D: Device>() {
    rotary_values::<f32, D>()
}
fn rotary_values_f64<D: Device>() {
    rotary_values::<f64, D>()
}
fn rotary_values_bf16<D: Device>() {
    rotary_values::<bf16, D>()
}

device_tests! {
    rotary_values_f32 => rotary_values_f32;
    rotary_values_f64 => rotary_values_f64;
    rotary_values_bf16 => rotary_values_bf16;
}

/// A runtime length gives what the static one gives; an empty one gives an empty result; the panicking form
/// names the op.
#[test]
fn rotary_runtime_lengths() {
    let rope = Rotary::<f32, DH, Cpu>::rotate_half(16, BASE);
    let x: Tensor<f32, Rank3<2, 5, DH>, Cpu> = random(51);
    let runtime = x.reshape_with_shape((Const::<2>, 5usize, Const::<DH>));
    assert_eq!(
        runtime.rotary(&rope, 3).to_vec(),
        x.rotary(&rope, 3).to_vec()
    );
    let empty =
        Tensor::<f32, (Const<2>, usize, Const<DH>), Cpu>::zeros_with_shape((Const, 0, Const));
    assert_eq!(empty.rotary(&rope, 16).dims().to_vec(), [2, 0, DH]);
    // An offset that would overflow the position count is the same error, not a wrapped index.
    assert!(matches!(
        x.try_rotary(&rope, usize::MAX),
        Err(Error::AxisTooShort { op: "rotary", .. })
    ));
    let message = panic_message(|| x.rotary(&rope, 12));
    assert_eq!(
        message,
        "rotary: takes 17 elements along axis 0, which has 16"
    );
}

/// The gradient of a rotation is the rotation back, in both layouts.
#[test]
fn rotary_gradients_match_finite_differences() {
    let x = Var::new(random::<f64, Rank3<2, 4, DH>, Cpu>(52));
    let probe: Tensor<f64, Rank3<2, 4, DH>, Cpu> = random(53);
    for rope in [
        Rotary::<f64, DH, Cpu>::rotate_half(8, BASE),
        Rotary::<f64, DH, Cpu>::interleaved(8, 500.0),
    ] {
        let loss = || (x.trace().rotary(&rope, 1) * &probe).sum_all();
        let check = check_gradient(&x, 1e-5, loss);
        assert!(check.error < 1e-8, "{check:?}");
    }
}

/// The sinusoidal table against its definition, static and runtime lengths.
#[test]
fn sinusoidal_table() {
    let pe: Tensor<f64, Rank2<7, 8>, Cpu> = sinusoidal_positions();
    let want: Vec<f64> = (0..56)
        .map(|k| {
            let (p, c) = ((k / 8) as f64, k % 8);
            let angle = p / 10000f64.powf((2 * (c / 2)) as f64 / 8.0);
            if c % 2 == 0 {
                angle.sin()
            } else {
                angle.cos()
            }
        })
        .collect();
    assert_within("sinusoidal", &pe.to_vec(), &want, 1e-15);
    let runtime = sinusoidal_positions_with_shape::<f32, usize, 8, Cpu>((7, Const));
    let want32: Vec<f64> = want.iter().map(|&v| v as f32 as f64).collect();
    assert_within(
        "sinusoidal, runtime length",
        &runtime.to_vec(),
        &want32,
        1e-7,
    );
}
