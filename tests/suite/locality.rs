//! NaN and infinity locality (issue 42): an op PyTorch defines as a gather or a window reduction propagates a
//! non-finite input only to the outputs that read it. For each input position in turn, a NaN there: the outputs
//! that are not finite must be exactly those whose PyTorch definition reads that position (written here from
//! PyTorch's definitions, not from the library). Resizes, adaptive pooling and fold were products by fixed
//! matrices or one-hot kernels, where `0 * NaN = NaN` spread one NaN over whole planes.

use crate::common::*;
use typed_tensor::autograd::{Traced, Var};
use typed_tensor::ops::Interpolation::{self, *};
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, Conv2dAxes, Pool2d};

/// Input `(1, 2, 4, 5)`: 40 positions, two planes.
type In = Rank4<1, 2, 4, 5>;
const PLANE: [usize; 2] = [4, 5];

/// Row-major coordinates of flat index `k` of `dims`.
fn coords<const R: usize>(mut k: usize, dims: [usize; R]) -> [usize; R] {
    let mut c = [0; R];
    for ax in (0..R).rev() {
        c[ax] = k % dims[ax];
        k /= dims[ax];
    }
    c
}

/// For each position `p` of an input, `op` on finite values with a NaN (then an infinity) at `p`: its non-finite
/// outputs must be those `o` with `reads(p, o)` (flat indices). Values are in [0.5, 1.5), so nothing else
/// overflows.
fn assert_local<SI: ConstShape, SO: Shape, D: Device>(
    what: &str,
    op: impl Fn(&Tensor<f32, SI, D>) -> Tensor<f32, SO, D>,
    reads: impl Fn(usize, usize) -> bool,
) {
    let base: Vec<f32> = Rng::new(7)
        .vec(SI::NUMEL, 0.5, 1.5)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    for p in 0..SI::NUMEL {
        // An infinity too: times a zero weight it is NaN, times any other weight infinite; never finite.
        for poison in [f32::NAN, f32::INFINITY] {
            let mut v = base.clone();
            v[p] = poison;
            let y = op(&Tensor::from_vec(v).unwrap()).to_vec();
            let got: Vec<usize> = (0..y.len()).filter(|&o| !y[o].is_finite()).collect();
            let want: Vec<usize> = (0..y.len()).filter(|&o| reads(p, o)).collect();
            assert_eq!(got, want, "{what}: {poison} at input {p}");
        }
    }
}

/// The input positions PyTorch's `interpolate` reads for output `j` of an axis `n -> out` (every tap, zero
/// weight or not; all of them a copy's when both sizes are equal).
fn interpolate_reads(mode: Interpolation, j: usize, n: usize, out: usize) -> Vec<usize> {
    crate::conv::taps(mode, j, n, out)
        .into_iter()
        .map(|(i, _)| i)
        .collect()
}

/// The bin of output `o` of an adaptive pooling `n -> out`.
fn bin(o: usize, n: usize, out: usize) -> std::ops::Range<usize> {
    o * n / out..((o + 1) * n).div_ceil(out)
}

fn resizes<D: Device>() {
    for mode in crate::conv::MODES {
        let reads = |[oh, ow]: [usize; 2], p: usize, o: usize| {
            let [_, pc, py, px] = coords(p, [1, 2, 4, 5]);
            let [_, oc, oy, ox] = coords(o, [1, 2, oh, ow]);
            let same = PLANE == [oh, ow];
            pc == oc
                && if same {
                    (py, px) == (oy, ox)
                } else {
                    interpolate_reads(mode, oy, 4, oh).contains(&py)
                        && interpolate_reads(mode, ox, 5, ow).contains(&px)
                }
        };
        assert_local::<In, _, D>(
            &format!("interpolate {mode:?} 4x5 -> 7x9"),
            |x| -> Tensor<f32, Rank4<1, 2, 7, 9>, D> { x.interpolate(mode) },
            |p, o| reads([7, 9], p, o),
        );
        assert_local::<In, _, D>(
            &format!("interpolate {mode:?} 4x5 -> 3x2"),
            |x| -> Tensor<f32, Rank4<1, 2, 3, 2>, D> { x.interpolate(mode) },
            |p, o| reads([3, 2], p, o),
        );
        assert_local::<In, _, D>(
            &format!("interpolate {mode:?} to the same size"),
            |x| -> Tensor<f32, Rank4<1, 2, 4, 5>, D> { x.interpolate(mode) },
            |p, o| reads([4, 5], p, o),
        );
    }
}

fn poolings<D: Device>() {
    let bins = |[oh, ow]: [usize; 2], p: usize, o: usize| {
        let [_, pc, py, px] = coords(p, [1, 2, 4, 5]);
        let [_, oc, oy, ox] = coords(o, [1, 2, oh, ow]);
        pc == oc && bin(oy, 4, oh).contains(&py) && bin(ox, 5, ow).contains(&px)
    };
    assert_local::<In, _, D>(
        "adaptive_avg_pool2d 4x5 -> 3x3 (overlapping bins)",
        |x| -> Tensor<f32, Rank4<1, 2, 3, 3>, D> { x.adaptive_avg_pool2d() },
        |p, o| bins([3, 3], p, o),
    );
    assert_local::<In, _, D>(
        "adaptive_avg_pool2d 4x5 -> 2x5",
        |x| -> Tensor<f32, Rank4<1, 2, 2, 5>, D> { x.adaptive_avg_pool2d() },
        |p, o| bins([2, 5], p, o),
    );
    assert_local::<In, _, D>(
        "adaptive_max_pool2d 4x5 -> 3x3",
        |x| -> Tensor<f32, Rank4<1, 2, 3, 3>, D> { x.adaptive_max_pool2d() },
        |p, o| bins([3, 3], p, o),
    );
    assert_local::<Rank3<2, 1, 7>, _, D>(
        "adaptive_avg_pool1d 7 -> 3",
        |x| -> Tensor<f32, Rank3<2, 1, 3>, D> { x.adaptive_avg_pool1d() },
        |p, o| p / 7 == o / 3 && bin(o % 3, 7, 3).contains(&(p % 7)),
    );
    // Windows 3x3, stride 2, padding 1: output (y, x) reads rows 2y - 1 ..= 2y + 1, columns 2x - 1 ..= 2x + 1.
    let window = |p: usize, o: usize| {
        let [_, pc, py, px] = coords(p, [1, 2, 4, 5]);
        let [_, oc, oy, ox] = coords(o, [1, 2, 2, 3]);
        pc == oc && (2 * oy).abs_diff(py) <= 1 && (2 * ox).abs_diff(px) <= 1
    };
    assert_local::<In, _, D>(
        "max_pool2d 3x3 s2 p1",
        |x| -> Tensor<f32, Rank4<1, 2, 2, 3>, D> { x.max_pool2d(Pool2d::<3, 2, 1>) },
        window,
    );
    assert_local::<In, _, D>(
        "avg_pool2d 3x3 s2 p1",
        |x| -> Tensor<f32, Rank4<1, 2, 2, 3>, D> { x.avg_pool2d(Pool2d::<3, 2, 1>) },
        window,
    );
}

/// unfold with per-axis geometry (stride (1, 2), padding (1, 0), dilation (2, 1)) reads one input per column
/// value; fold adds each column value into that one pixel.
fn columns<D: Device>() {
    let geometry = Conv2dAxes::<1, 2, 1, 0, 2, 1, 1>;
    // Column value (c, i, j, y, x) of a 2x3 window is the input at (c, y + 2 i - 1, 2 x + j).
    let source = |o: usize| -> Option<usize> {
        let [_, r, y, x] = coords(o, [1, 12, 4, 2]);
        let (c, i, j) = (r / 6, (r / 3) % 2, r % 3);
        let (sy, sx) = ((y + 2 * i).checked_sub(1)?, 2 * x + j);
        (sy < 4 && sx < 5).then_some((c * 4 + sy) * 5 + sx)
    };
    assert_local::<In, _, D>(
        "unfold",
        |x| -> Tensor<f32, Rank4<1, 12, 4, 2>, D> { x.unfold::<2, 3, _, _, _, _>(geometry) },
        |p, o| source(o) == Some(p),
    );
    assert_local::<Rank4<1, 12, 4, 2>, _, D>(
        "fold",
        |c| -> Tensor<f32, In, D> { c.fold::<2, 3, _, _, _, _>(geometry) },
        |p, o| source(p) == Some(o),
    );
}

/// The gathers and rearrangements: each output reads one input, named by its index or its position.
fn gathers<D: Device>() {
    let plane = |p: usize| coords(p, [1, 2, 4, 5]);
    let idx = Tensor::<u32, _, D>::from_array([4, 0, 4, 2]);
    assert_local::<In, _, D>(
        "index_select along the width",
        |x| -> Tensor<f32, Rank4<1, 2, 4, 4>, D> { x.index_select::<Axis<3>, _, _>(&idx) },
        |p, o| {
            let ([_, pc, py, px], [_, oc, oy, ox]) = (plane(p), coords(o, [1, 2, 4, 4]));
            (pc, py) == (oc, oy) && px == [4, 0, 4, 2][ox]
        },
    );
    let at = Tensor::<i64, Rank4<1, 2, 4, 1>, D>::from_vec(vec![3, 0, 4, 1, 2, 2, 0, 4]).unwrap();
    assert_local::<In, _, D>(
        "gather along the width",
        |x| -> Tensor<f32, Rank4<1, 2, 4, 1>, D> { x.gather::<Axis<3>, _, _>(&at) },
        |p, o| {
            let [_, pc, py, px] = plane(p);
            o == pc * 4 + py && px == [3, 0, 4, 1, 2, 2, 0, 4][o]
        },
    );
    assert_local::<In, _, D>(
        "pad_mode reflect along the width",
        |x| -> Tensor<f32, Rank4<1, 2, 4, 9>, D> {
            x.pad_mode::<Axis<3>, 2, 2, 9>(typed_tensor::ops::PadMode::Reflect)
        },
        |p, o| {
            let ([_, pc, py, px], [_, oc, oy, ox]) = (plane(p), coords(o, [1, 2, 4, 9]));
            // Output column ox reads input column |ox - 2| mirrored at 4: [2 1 | 0 1 2 3 4 | 3 2].
            let src = [2, 1, 0, 1, 2, 3, 4, 3, 2][ox];
            (pc, py) == (oc, oy) && px == src
        },
    );
    assert_local::<In, _, D>(
        "flip along the height",
        |x| x.flip::<Axis<2>>(),
        |p, o| {
            let ([_, pc, py, px], [_, oc, oy, ox]) = (plane(p), plane(o));
            (pc, px) == (oc, ox) && py == 3 - oy
        },
    );
    assert_local::<Rank4<1, 4, 2, 3>, _, D>(
        "pixel_shuffle by 2",
        |x| -> Tensor<f32, Rank4<1, 1, 4, 6>, D> { x.pixel_shuffle::<2, _, _, _>() },
        |p, o| {
            // Output (y, x) is input channel (y % 2) 2 + x % 2 at (y / 2, x / 2).
            let ([_, pc, py, px], [_, _, oy, ox]) =
                (coords(p, [1, 4, 2, 3]), coords(o, [1, 1, 4, 6]));
            pc == (oy % 2) * 2 + ox % 2 && (py, px) == (oy / 2, ox / 2)
        },
    );
    assert_local::<Rank4<1, 2, 2, 3>, _, D>(
        "upsample_nearest2d by 2",
        |x| -> Tensor<f32, Rank4<1, 2, 4, 6>, D> { x.upsample_nearest2d() },
        |p, o| {
            let ([_, pc, py, px], [_, oc, oy, ox]) =
                (coords(p, [1, 2, 2, 3]), coords(o, [1, 2, 4, 6]));
            pc == oc && (py, px) == (oy / 2, ox / 2)
        },
    );
    let ids = Tensor::<u32, _, D>::from_array([[3, 0], [3, 1]]);
    assert_local::<Rank2<4, 3>, _, D>(
        "embedding",
        |table| -> Tensor<f32, Rank3<2, 2, 3>, D> { table.embedding(&ids) },
        |p, o| p % 3 == o % 3 && p / 3 == [3, 0, 3, 1][o / 3],
    );
}

/// The issue's cases, by value: a 4x4 image of ones with one NaN resized to 8x8 by nearest has 4 NaN (it had
/// 64); adaptive average pooling of a plane holding one infinity gives `[inf, 1, 1, 1]` (it gave `[inf, NaN,
/// NaN, NaN]`); fold of columns holding one NaN has one NaN pixel (it had 4); unfold on every device has one
/// non-finite entry per copy of the NaN the windows read.
fn issue_cases<D: Device>() {
    let mut ones = [1.0f32; 16];
    ones[5] = f32::NAN;
    let x = Tensor::<f32, Rank4<1, 1, 4, 4>, D>::from_vec(ones.to_vec()).unwrap();
    let up: Tensor<f32, Rank4<1, 1, 8, 8>, D> = x.interpolate(Nearest);
    assert_eq!(up.to_vec().iter().filter(|v| v.is_nan()).count(), 4);
    let mut plane = [1.0f32; 16];
    plane[0] = f32::INFINITY;
    let x = Tensor::<f32, Rank4<1, 1, 4, 4>, D>::from_vec(plane.to_vec()).unwrap();
    let pooled: Tensor<f32, Rank4<1, 1, 2, 2>, D> = x.adaptive_avg_pool2d();
    assert_eq!(pooled.to_vec(), [f32::INFINITY, 1.0, 1.0, 1.0]);
    let mut cols = [1.0f32; 4 * 9];
    cols[4] = f32::NAN; // tap (0, 0) of window (1, 1)
    let c = Tensor::<f32, Rank4<1, 4, 3, 3>, D>::from_vec(cols.to_vec()).unwrap();
    let image: Tensor<f32, Rank4<1, 1, 4, 4>, D> = c.fold::<2, 2, _, _, _, _>(Conv::<1, 0, 1, 1>);
    assert_eq!(image.to_vec().iter().filter(|v| v.is_nan()).count(), 1);
    let x = Tensor::<f32, Rank4<1, 1, 4, 4>, D>::from_vec(ones.to_vec()).unwrap();
    let unfolded: Tensor<f32, Rank4<1, 4, 3, 3>, D> =
        x.unfold::<2, 2, _, _, _, _>(Conv::<1, 0, 1, 1>);
    // Pixel (1, 1) sits in four windows, once each.
    assert_eq!(
        unfolded.to_vec().iter().filter(|v| !v.is_finite()).count(),
        4
    );
}

/// A loss of the traced input.
type Loss<'a, D> = &'a dyn Fn(&Traced<f32, In, D>) -> Traced<f32, (), D>;

/// The gradients keep the same locality: a NaN in one output's gradient reaches only the inputs that output read.
fn gradients<D: AutogradDevice>() {
    let x = Var::new(random::<f32, In, D>(3));
    let local = |what: &str, o: usize, f: Loss<D>, reads: &dyn Fn(usize) -> bool| {
        let g = f(&x.trace()).backward().get(&x).to_vec();
        let got: Vec<usize> = (0..g.len()).filter(|&p| !g[p].is_finite()).collect();
        let want: Vec<usize> = (0..g.len()).filter(|&p| reads(p)).collect();
        assert_eq!(got, want, "{what}: NaN in the gradient of output {o}");
    };
    for o in [0, 10, 31] {
        let mut w = vec![1.0f32; 2 * 4 * 4];
        w[o] = f32::NAN;
        let w = Tensor::<f32, Rank4<1, 2, 4, 4>, D>::from_vec(w).unwrap();
        let [_, oc, oy, ox] = coords(o, [1, 2, 4, 4]);
        for mode in [
            Nearest,
            Bicubic {
                align_corners: false,
            },
        ] {
            local(
                &format!("interpolate {mode:?}"),
                o,
                &|t| (t.interpolate::<4, 4>(mode) * &w).sum_all(),
                &|p| {
                    let [_, pc, py, px] = coords(p, [1, 2, 4, 5]);
                    pc == oc
                        && interpolate_reads(mode, oy, 4, 4).contains(&py)
                        && interpolate_reads(mode, ox, 5, 4).contains(&px)
                },
            );
        }
        let w3 = Tensor::<f32, Rank4<1, 2, 4, 4>, D>::from_vec(
            (0..32)
                .map(|k| if k == o { f32::NAN } else { 1.0 })
                .collect(),
        )
        .unwrap();
        local(
            "adaptive_avg_pool2d",
            o,
            &|t| (t.adaptive_avg_pool2d::<4, 4>() * &w3).sum_all(),
            &|p| {
                let [_, pc, py, px] = coords(p, [1, 2, 4, 5]);
                pc == oc && bin(oy, 4, 4).contains(&py) && bin(ox, 5, 4).contains(&px)
            },
        );
    }
}

device_tests! {
    resizes_read_only_their_taps => resizes;
    poolings_read_only_their_bins_and_windows => poolings;
    unfold_and_fold_move_each_value_once => columns;
    gathers_and_rearrangements_read_one_input => gathers;
    the_issue_cases => issue_cases;
    gradients_stay_local => gradients;
}

embedded_tests! {
    resizes_read_only_their_taps => resizes;
    poolings_read_only_their_bins_and_windows => poolings;
    unfold_and_fold_move_each_value_once => columns;
    gathers_and_rearrangements_read_one_input => gathers;
    the_issue_cases => issue_cases;
}
