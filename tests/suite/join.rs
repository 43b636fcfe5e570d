//! cat, stack, split, flip, roll and pad against naive references on strided views, for every dtype.

use crate::common::*;
use typed_tensor::prelude::*;
use typed_tensor::shape::{Dims, HasAxis};

fn join_ops<T: WithDType, D: Device>() {
    let lhs = views::<T, D>(71, 0.0, 100.0);
    let rhs = views::<T, D>(72, 0.0, 100.0);
    for (a, b) in lhs.iter().zip(rhs.iter().rev()) {
        let what = |op: &str| format!("{op} of {} and {} views [{}]", a.kind, b.kind, T::DTYPE);
        // cat along 0: rows of a then rows of b; along 1: each row of a then the same row of b.
        let c0: Tensor<T, Rank2<10, N>, D> = a.tensor.cat::<Axis<0>, 10, _>(&b.tensor);
        let want: Vec<T> = a.expected.iter().chain(&b.expected).copied().collect();
        assert_eq!(c0.to_vec(), want, "{}", what("cat axis 0"));
        let c1: Tensor<T, Rank2<M, 14>, D> = a.tensor.cat::<Axis<1>, 14, _>(&b.tensor);
        let rows_interleaved: Vec<T> = (0..M)
            .flat_map(|r| {
                [
                    &a.expected[r * N..(r + 1) * N],
                    &b.expected[r * N..(r + 1) * N],
                ]
                .concat()
            })
            .collect();
        assert_eq!(c1.to_vec(), rows_interleaved, "{}", what("cat axis 1"));
        // stack along a middle axis: (5, 2, 7) with [r][0] from a and [r][1] from b, the same memory order as
        // the cat along axis 1 above.
        let s: Tensor<T, Rank3<M, 2, N>, D> =
            Tensor::stack::<Axis<1>, 2>(&[a.tensor.clone(), b.tensor.clone()]);
        assert_eq!(s.to_vec(), rows_interleaved, "{}", what("stack axis 1"));
        // concat of three parts (one of them twice) along each axis, in one pass.
        let c3: Tensor<T, Rank2<M, 21>, D> =
            Tensor::concat::<Axis<1>, 21>((&a.tensor, &b.tensor, &a.tensor));
        let want: Vec<T> = (0..M)
            .flat_map(|r| {
                let row = |e: &[T]| e[r * N..(r + 1) * N].to_vec();
                [row(&a.expected), row(&b.expected), row(&a.expected)].concat()
            })
            .collect();
        assert_eq!(
            c3.to_vec(),
            want,
            "{}",
            what("concat of three along axis 1")
        );
        let first = a.tensor.split_sizes::<Axis<0>, (Const<2>, Const<3>)>();
        let c0: Tensor<T, Rank2<10, N>, D> =
            Tensor::concat::<Axis<0>, 10>((&first.1, &b.tensor, &first.0));
        let want: Vec<T> = [&a.expected[2 * N..], &b.expected[..], &a.expected[..2 * N]].concat();
        assert_eq!(
            c0.to_vec(),
            want,
            "{}",
            what("concat of three along axis 0")
        );
    }
    for v in &lhs {
        let what = |op: &str| format!("{op} of {} view [{}]", v.kind, T::DTYPE);
        let e = &v.expected;
        let flipped: Vec<T> = (0..M * N)
            .map(|k| e[(k / N) * N + (N - 1 - k % N)])
            .collect();
        assert_eq!(
            v.tensor.flip::<Axis<1>>().to_vec(),
            flipped,
            "{}",
            what("flip axis 1")
        );
        // split_sizes along each axis: (2, 0, 5) columns, (1, 4) rows, each piece its slice of the naive copy.
        let (c0, c1, c2) = v
            .tensor
            .split_sizes::<Axis<1>, (Const<2>, Const<0>, Const<5>)>();
        let cols = |lo: usize, hi: usize| -> Vec<T> {
            (0..M)
                .flat_map(|r| e[r * N + lo..r * N + hi].to_vec())
                .collect()
        };
        assert_eq!(c0.to_vec(), cols(0, 2), "{}", what("split_sizes first"));
        assert_eq!(
            c1.dims().to_vec(),
            [M, 0],
            "{}",
            what("split_sizes empty piece")
        );
        assert_eq!(c2.to_vec(), cols(2, 7), "{}", what("split_sizes last"));
        let (r0, r1) = v.tensor.split_sizes::<Axis<0>, (Const<1>, Const<4>)>();
        assert_eq!(r0.to_vec(), e[..N].to_vec(), "{}", what("split_sizes rows"));
        assert_eq!(r1.to_vec(), e[N..].to_vec(), "{}", what("split_sizes rows"));
        let flipped0: Vec<T> = (0..M * N).map(|k| e[(M - 1 - k / N) * N + k % N]).collect();
        assert_eq!(
            v.tensor.flip::<Axis<0>>().to_vec(),
            flipped0,
            "{}",
            what("flip axis 0")
        );
        // Both axes at once, in either order: every element's row and column reversed.
        let flipped_both: Vec<T> = (0..M * N).map(|k| e[M * N - 1 - k]).collect();
        assert_eq!(
            v.tensor.flip::<(Axis<0>, Axis<1>)>().to_vec(),
            flipped_both,
            "{}",
            what("flip axes 0 and 1")
        );
        assert_eq!(
            v.tensor.flip::<(Axis<1>, Axis<0>)>().to_vec(),
            flipped_both,
            "{}",
            what("flip axes 1 and 0")
        );
        for shift in [-9isize, -1, 0, 2, 7, 16] {
            let rolled: Vec<T> = (0..M * N)
                .map(|k| {
                    e[(k / N) * N + ((k % N) as isize - shift).rem_euclid(N as isize) as usize]
                })
                .collect();
            assert_eq!(
                v.tensor.roll::<Axis<1>>(shift).to_vec(),
                rolled,
                "{}",
                what(&format!("roll {shift}"))
            );
        }
        let padded: Tensor<T, Rank2<M, 10>, D> = v.tensor.pad::<Axis<1>, 2, 1, 10>();
        let want: Vec<T> = (0..M)
            .flat_map(|r| {
                [
                    vec![T::ZERO; 2],
                    e[r * N..(r + 1) * N].to_vec(),
                    vec![T::ZERO],
                ]
                .concat()
            })
            .collect();
        assert_eq!(padded.to_vec(), want, "{}", what("pad"));
        let padded0: Tensor<T, Rank2<6, N>, D> = v.tensor.pad::<Axis<0>, 1, 0, 6>();
        assert_eq!(
            padded0.to_vec(),
            [vec![T::ZERO; N], e.clone()].concat(),
            "{}",
            what("pad axis 0")
        );
    }
    // split: views that tile the axis.
    let x: Tensor<T, Rank2<6, 4>, D> = Tensor::arange();
    let parts = x.split::<Axis<0>, 2, 3>();
    for (i, p) in parts.iter().enumerate() {
        let want: Vec<T> = (i * 8..(i + 1) * 8)
            .map(|k| T::from_i64(k as i64))
            .collect();
        assert_eq!(p.to_vec(), want, "split part {i} [{}]", T::DTYPE);
    }
    let [l, r] = x.t().split::<Axis<0>, 2, 2>();
    assert_eq!(l.to_vec(), x.t().to_vec()[..12].to_vec());
    assert_eq!(r.to_vec(), x.t().to_vec()[12..].to_vec());
}

fn every_dtype<D: Device>() {
    join_ops::<u8, D>();
    join_ops::<u32, D>();
    join_ops::<i8, D>();
    join_ops::<i32, D>();
    join_ops::<i64, D>();
    join_ops::<f16, D>();
    join_ops::<bf16, D>();
    join_ops::<f32, D>();
    join_ops::<f64, D>();
}

/// Runtime-sized axes whose sizes do not fit: each `try_` form returns an error naming the op, the axis and both
/// sizes (or both shapes), and the panicking form panics with the same message.
fn runtime_size_errors<D: Device>() {
    type Rows = (usize, Const<2>);
    let a = Tensor::<f32, Rows, D>::from_vec_with_shape((2, Const), vec![1., 2., 3., 4.]).unwrap();
    let b = Tensor::<f32, Rows, D>::from_vec_with_shape((1, Const), vec![5., 6.]).unwrap();
    let c: Tensor<f32, Rank2<3, 2>, D> = a.try_cat::<Axis<0>, 3, _>(&b).unwrap();
    assert_eq!(c.to_array(), [[1., 2.], [3., 4.], [5., 6.]]);
    let msg = "cat: axis 0 has size 3, expected 4";
    assert_eq!(a.try_cat::<Axis<0>, 4, _>(&b).unwrap_err().to_string(), msg);
    assert_eq!(panic_message(|| a.cat::<Axis<0>, 4, _>(&b)), msg);
    let wide = Tensor::<f32, (usize, usize), D>::zeros_with_shape((1, 3));
    let narrow = Tensor::<f32, (usize, usize), D>::zeros_with_shape((2, 2));
    let msg = "cat: shapes [1, 3] and [2, 2] do not match";
    assert_eq!(
        wide.try_cat::<Axis<0>, 3, _>(&narrow)
            .unwrap_err()
            .to_string(),
        msg
    );

    let c: Tensor<f32, Rank2<5, 2>, D> = Tensor::try_concat::<Axis<0>, 5>((&a, &b, &a)).unwrap();
    assert_eq!(c.to_vec(), [1., 2., 3., 4., 5., 6., 1., 2., 3., 4.]);
    let msg = "concat: axis 0 has size 5, expected 6";
    let err = Tensor::try_concat::<Axis<0>, 6>((&a, &b, &a)).unwrap_err();
    assert_eq!(err.to_string(), msg);
    let long: Tensor<f32, Rank2<5, 2>, D> = Tensor::concat::<Axis<0>, 5>((&a, &b, &a));
    assert_eq!(long.dims().to_vec(), [5, 2]);
    assert_eq!(
        panic_message(|| Tensor::concat::<Axis<0>, 6>((&a, &b, &a))),
        msg
    );
    let msg = "concat: shapes [1, 3] and [2, 2] do not match";
    let err = Tensor::try_concat::<Axis<0>, 5>((&wide, &narrow, &narrow)).unwrap_err();
    assert_eq!(err.to_string(), msg);
    // Parts whose joined length would pass isize::MAX: ShapeOverflow, before any allocation.
    let half =
        Tensor::<f32, (usize,), D>::full_with_shape((1,), 0.0).broadcast_with_shape((1 << 62,));
    assert!(matches!(
        Tensor::try_concat::<Axis<0>, 4>((&half, &half, &half)),
        Err(Error::ShapeOverflow { op: "concat", .. })
    ));
    // split_sizes of a huge axis (a broadcast view) and of an empty-but-huge tensor: AxisSize, nothing allocated.
    let long = Tensor::<f32, (usize,), D>::full_with_shape((1,), 0.0)
        .broadcast_with_shape((1usize << 40,));
    let err = long
        .try_split_sizes::<Axis<0>, (Const<2>, Const<3>)>()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("split_sizes: axis 0 has size {}, expected 5", 1usize << 40)
    );
    let empty_huge = Tensor::<f32, (usize, usize), D>::zeros_with_shape((0, 1 << 40));
    assert!(empty_huge
        .try_split_sizes::<Axis<1>, (Const<2>, Const<3>)>()
        .is_err());
    let (p, q) = empty_huge
        .try_split_sizes::<Axis<0>, (Const<0>, Const<0>)>()
        .unwrap();
    assert_eq!(
        (p.dims().to_vec(), q.dims().to_vec()),
        (vec![0, 1 << 40], vec![0, 1 << 40])
    );
    let none = Tensor::<f32, (usize, usize), D>::zeros_with_shape((0, 2));
    let same: Tensor<f32, (Const<2>, usize), D> =
        Tensor::concat::<Axis<0>, 2>((&none, &narrow, &none));
    assert_eq!(same.to_vec(), [0.0; 4]);

    let s = Tensor::try_stack::<Axis<1>, 2>(&[a.clone(), a.clone()]).unwrap();
    assert_eq!(s.dims().to_vec(), [2, 2, 2]);
    let msg = "stack: shapes [2, 2] and [1, 2] do not match";
    assert_eq!(
        Tensor::try_stack::<Axis<0>, 3>(&[a.clone(), a.clone(), b.clone()])
            .unwrap_err()
            .to_string(),
        msg
    );
    assert_eq!(
        panic_message(|| Tensor::stack::<Axis<0>, 2>(&[a.clone(), b.clone()])),
        msg
    );

    let [x, y] = a.try_split::<Axis<0>, 1, 2>().unwrap();
    assert_eq!((x.to_vec(), y.to_vec()), (vec![1., 2.], vec![3., 4.]));
    let msg = "split: axis 0 has size 2, expected 3";
    assert_eq!(a.try_split::<Axis<0>, 1, 3>().unwrap_err().to_string(), msg);
    assert_eq!(panic_message(|| a.split::<Axis<0>, 1, 3>()), msg);
    let (x, y) = a
        .try_split_sizes::<Axis<0>, (Const<1>, Const<1>)>()
        .unwrap();
    assert_eq!((x.to_vec(), y.to_vec()), (vec![1., 2.], vec![3., 4.]));
    let msg = "split_sizes: axis 0 has size 2, expected 3";
    let err = a
        .try_split_sizes::<Axis<0>, (Const<1>, Const<2>)>()
        .unwrap_err();
    assert_eq!(err.to_string(), msg);
    assert_eq!(
        panic_message(|| a.split_sizes::<Axis<0>, (Const<2>, Const<1>)>()),
        msg
    );

    let p: Tensor<f32, Rank2<4, 2>, D> = a.try_pad::<Axis<0>, 1, 1, 4>().unwrap();
    assert_eq!(p.to_array(), [[0., 0.], [1., 2.], [3., 4.], [0., 0.]]);
    let msg = "pad: axis 0 has size 2, expected 3";
    assert_eq!(
        a.try_pad::<Axis<0>, 1, 1, 5>().unwrap_err().to_string(),
        msg
    );
    assert_eq!(panic_message(|| a.pad::<Axis<0>, 1, 1, 5>()), msg);
}

/// tile and repeat_interleave of every view kind against index arithmetic, every dtype; runtime-shaped targets
/// that are not multiples are errors.
fn repeats_for<T: WithDType, D: Device>() {
    for v in views::<T, D>(75, 0.0, 100.0) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        let what = |op: &str| format!("{op} of {} view [{}]", v.kind, T::DTYPE);
        let tiled: Tensor<T, Rank3<2, 10, 14>, D> = v.tensor.unsqueeze::<Axis<0>>().tile();
        let want: Vec<f64> = (0..2 * 10 * 14)
            .map(|k| xs[(k % 140 / 14) % M * N + k % 14 % N])
            .collect();
        let got: Vec<f64> = tiled.to_vec().iter().map(|x| x.to_f64()).collect();
        assert_eq!(got, want, "{}", what("tile"));
        let inter: Tensor<T, Rank2<M, 21>, D> = v.tensor.repeat_interleave::<Axis<1>, _>();
        let want: Vec<f64> = (0..M * 21)
            .map(|k| xs[(k / 21) * N + (k % 21) / 3])
            .collect();
        let got: Vec<f64> = inter.to_vec().iter().map(|x| x.to_f64()).collect();
        assert_eq!(got, want, "{}", what("repeat_interleave along axis 1"));
        let inter: Tensor<T, Rank2<10, N>, D> = v.tensor.repeat_interleave::<Axis<0>, _>();
        let want: Vec<f64> = (0..10 * N).map(|k| xs[(k / N / 2) * N + k % N]).collect();
        let got: Vec<f64> = inter.to_vec().iter().map(|x| x.to_f64()).collect();
        assert_eq!(got, want, "{}", what("repeat_interleave along axis 0"));
        // Rank 4, every axis above 1 and repeated: eight strided axes, more than a layout holds (a gather by
        // flat positions; it panicked). Axes 0 and 3 are stride-0 broadcasts of the view.
        let wide = v
            .tensor
            .unsqueeze::<Axis<2>>()
            .broadcast::<Rank3<M, N, 2>>()
            .unsqueeze::<Axis<0>>()
            .broadcast::<Rank4<2, M, N, 2>>();
        let tiled: Tensor<T, Rank4<4, 10, 14, 6>, D> = wide.tile();
        let want: Vec<f64> = (0..4 * 10 * 14 * 6)
            .map(|k| xs[(k / (14 * 6) % 10 % M) * N + k / 6 % 14 % N])
            .collect();
        let got: Vec<f64> = tiled.to_vec().iter().map(|x| x.to_f64()).collect();
        assert_eq!(got, want, "{}", what("tile of rank 4 along every axis"));
    }
    // ONNX's test_tile case: (1, 1, 1, 2) to (2, 2, 2, 2), sixteen values.
    let x =
        Tensor::<T, Rank4<1, 1, 1, 2>, D>::from_array([[[[T::from_f64(3.0), T::from_f64(4.0)]]]]);
    let t: Tensor<T, Rank4<2, 2, 2, 2>, D> = x.tile();
    let want: Vec<f64> = (0..16).map(|k| [3.0, 4.0][k % 2]).collect();
    assert_eq!(
        t.to_vec().iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
        want
    );
}

/// The repeat of `xs` (dense, `dims`) to `out`, each axis's input coordinate `(o / inner) % dim` of the output's.
fn repeat_reference(xs: &[f32], dims: &Dims, out: &Dims, inner: &[usize]) -> Vec<f32> {
    let n: usize = out.iter().product();
    (0..n)
        .map(|k| {
            let (mut rest, mut flat, mut scale) = (k, 0, 1);
            for ax in (0..out.len()).rev() {
                let o = rest % out[ax];
                rest /= out[ax];
                flat += (o / inner[ax]) % dims[ax] * scale;
                scale *= dims[ax];
            }
            xs[flat]
        })
        .collect()
}

/// `try_tile_with_shape` to `tiled` and `try_repeat_interleave_with_shape` along `Ax` to `interleaved` of a
/// tensor of `dims` (runtime-sized: the typed forms refuse such targets at build time), against index arithmetic.
fn check_repeats<S: Shape + HasAxis<Ax>, Ax, D: Device>(dims: S, tiled: S, interleaved: S) {
    let (d, t, i) = (dims.dims(), tiled.dims(), interleaved.dims());
    let xs: Vec<f32> = (0..d.numel()).map(|k| k as f32).collect();
    let x = Tensor::<f32, S, D>::from_slice_with_shape(dims, &xs).unwrap();
    let want = repeat_reference(&xs, &d, &t, &vec![1; d.len()]);
    let got = x.try_tile_with_shape(tiled).unwrap().to_vec();
    assert_eq!(got, want, "tile {d} to {t}");
    let inner: Vec<usize> = (0..d.len()).map(|ax| i[ax] / d[ax]).collect();
    let want = repeat_reference(&xs, &d, &i, &inner);
    let got = x
        .try_repeat_interleave_with_shape::<Ax, S>(interleaved)
        .unwrap()
        .to_vec();
    assert_eq!(got, want, "repeat_interleave {d} to {i}");
}

/// Every rank with every axis repeated; at rank 4 and above that needs more strided axes than a layout holds.
fn repeats_every_rank<D: Device>() {
    check_repeats::<(usize,), Axis<0>, D>((3,), (6,), (9,));
    check_repeats::<(usize, usize), Axis<1>, D>((2, 3), (4, 9), (2, 6));
    check_repeats::<(usize, usize, usize), Axis<2>, D>((2, 3, 2), (4, 6, 4), (2, 3, 6));
    check_repeats::<(usize, usize, usize, usize), Axis<0>, D>(
        (2, 3, 2, 2),
        (4, 6, 4, 6),
        (6, 3, 2, 2),
    );
    check_repeats::<(usize, usize, usize, usize, usize), Axis<3>, D>(
        (2, 3, 1, 2, 2),
        (4, 6, 3, 4, 4),
        (2, 3, 1, 4, 2),
    );
    check_repeats::<(usize, usize, usize, usize, usize, usize), Axis<5>, D>(
        (2, 2, 2, 2, 2, 2),
        (4, 4, 4, 4, 4, 4),
        (2, 2, 2, 2, 2, 6),
    );
}

fn repeats_every_dtype<D: Device>() {
    repeats_for::<f32, D>();
    repeats_for::<f64, D>();
    repeats_for::<f16, D>();
    repeats_for::<bf16, D>();
    repeats_for::<u8, D>();
    repeats_for::<u32, D>();
    repeats_for::<i8, D>();
    repeats_for::<i32, D>();
    repeats_for::<i64, D>();
}

fn runtime_repeats<D: Device>() {
    let x = Tensor::<f32, (usize, usize), D>::ones_with_shape((2, 3));
    assert_eq!(
        x.try_tile_with_shape((4, 9)).unwrap().dims().as_slice(),
        &[4, 9]
    );
    let err = x.try_tile_with_shape((4, 8)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tile: shapes [2, 3] and [4, 8] do not match"
    );
}

/// Padding modes along the rows and columns of a transposed (strided) view, against a direct reading of
/// PyTorch's definitions: reflect mirrors about the edge entries, replicate repeats them, circular wraps;
/// `pad_value` fills with the value.
fn pad_modes_for<T: WithDType, D: Device>() {
    use typed_tensor::ops::PadMode;
    let src: Tensor<T, Rank2<4, 3>, D> = Tensor::arange();
    let x = src.t(); // (3, 4): x[i][j] = 3 j + i
    let at = |i: usize, j: usize| (3 * j + i) as f64;
    let reference = |mode: PadMode, i: isize, n: isize| -> usize {
        let k = match mode {
            PadMode::Reflect if i < 0 => -i,
            PadMode::Reflect if i >= n => 2 * (n - 1) - i,
            PadMode::Reflect => i,
            PadMode::Replicate => i.max(0).min(n - 1),
            PadMode::Circular => ((i % n) + n) % n,
        };
        k as usize
    };
    for mode in [PadMode::Reflect, PadMode::Replicate, PadMode::Circular] {
        // Along the columns: 3 before, 2 after (4 entries: reflect allows up to 3).
        let p: Tensor<T, Rank2<3, 9>, D> = x.pad_mode::<Axis<1>, 3, 2, 9>(mode);
        let want: Vec<f64> = (0..27)
            .map(|k| at(k / 9, reference(mode, (k % 9) as isize - 3, 4)))
            .collect();
        assert_eq!(
            to_f64s(&p.to_vec()),
            want,
            "{mode:?} along axis 1 [{}]",
            T::DTYPE
        );
        // Along the rows: 1 before, 2 after.
        let p: Tensor<T, Rank2<6, 4>, D> = x.pad_mode::<Axis<0>, 1, 2, 6>(mode);
        let want: Vec<f64> = (0..24)
            .map(|k| at(reference(mode, (k / 4) as isize - 1, 3), k % 4))
            .collect();
        assert_eq!(
            to_f64s(&p.to_vec()),
            want,
            "{mode:?} along axis 0 [{}]",
            T::DTYPE
        );
    }
    // The modes given as types (checked at build time) pad as their values do, at the longest sides each
    // allows on the 4 columns: reflect 3, circular 4, replicate any.
    use typed_tensor::ops::{Circular, Reflect, Replicate};
    let by_value: Tensor<T, Rank2<3, 10>, D> = x.pad_mode::<Axis<1>, 3, 3, 10>(PadMode::Reflect);
    let by_type: Tensor<T, Rank2<3, 10>, D> = x.pad_mode::<Axis<1>, 3, 3, 10>(Reflect);
    assert_eq!(
        by_type.to_vec(),
        by_value.to_vec(),
        "Reflect [{}]",
        T::DTYPE
    );
    let by_value: Tensor<T, Rank2<3, 12>, D> = x.pad_mode::<Axis<1>, 4, 4, 12>(PadMode::Circular);
    let by_type: Tensor<T, Rank2<3, 12>, D> = x.pad_mode::<Axis<1>, 4, 4, 12>(Circular);
    assert_eq!(
        by_type.to_vec(),
        by_value.to_vec(),
        "Circular [{}]",
        T::DTYPE
    );
    let by_value: Tensor<T, Rank2<9, 4>, D> = x.pad_mode::<Axis<0>, 5, 1, 9>(PadMode::Replicate);
    let by_type = x.try_pad_mode::<Axis<0>, 5, 1, 9>(Replicate).unwrap();
    assert_eq!(
        by_type.to_vec(),
        by_value.to_vec(),
        "Replicate [{}]",
        T::DTYPE
    );
    let p: Tensor<T, Rank2<3, 6>, D> = x.pad_value::<Axis<1>, 1, 1, 6>(T::from_f64(7.0));
    let want: Vec<f64> = (0..18)
        .map(|k| match k % 6 {
            0 | 5 => 7.0,
            j => at(k / 6, j - 1),
        })
        .collect();
    assert_eq!(to_f64s(&p.to_vec()), want, "pad_value [{}]", T::DTYPE);
}

fn to_f64s<T: WithDType>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

fn pad_modes_every_dtype<D: Device>() {
    pad_modes_for::<u8, D>();
    pad_modes_for::<u32, D>();
    pad_modes_for::<i8, D>();
    pad_modes_for::<i32, D>();
    pad_modes_for::<i64, D>();
    pad_modes_for::<f16, D>();
    pad_modes_for::<bf16, D>();
    pad_modes_for::<f32, D>();
    pad_modes_for::<f64, D>();
}

/// A side as long as the axis is too long for reflect; circular takes up to the axis's length; an empty axis
/// has nothing to replicate; a runtime-sized axis of the wrong length is an `AxisSize` error.
fn pad_mode_errors<D: Device>() {
    use typed_tensor::ops::PadMode;
    let x: Tensor<f32, Rank1<3>, D> = Tensor::arange();
    let err = x
        .try_pad_mode::<Axis<0>, 3, 0, 6>(PadMode::Reflect)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "pad: reflect padding must be shorter than the axis on each side"
    );
    let wrapped = x.pad_mode::<Axis<0>, 3, 3, 9>(PadMode::Circular);
    assert_eq!(wrapped.to_vec(), [0., 1., 2., 0., 1., 2., 0., 1., 2.]);
    let err = x
        .try_pad_mode::<Axis<0>, 0, 4, 7>(PadMode::Circular)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "pad: circular padding must not be longer than the axis on each side"
    );
    let empty = Tensor::<f32, (usize,), D>::zeros_with_shape((0,));
    let err = empty
        .try_pad_mode::<Axis<0>, 1, 1, 2>(PadMode::Replicate)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "pad: replicate padding needs a non-empty axis"
    );
    let runtime = Tensor::<f32, (usize,), D>::zeros_with_shape((4,));
    assert!(runtime
        .try_pad_mode::<Axis<0>, 1, 1, 5>(PadMode::Replicate)
        .is_err());
}

device_tests! {
    pad_modes_every_dtype => pad_modes_every_dtype;
    pad_mode_errors => pad_mode_errors;
    tile_and_repeat_interleave_every_dtype => repeats_every_dtype;
    tile_to_runtime_shapes => runtime_repeats;
    tile_and_repeat_interleave_every_rank => repeats_every_rank;
    join_and_split_every_dtype => every_dtype;
    runtime_sizes_that_do_not_fit => runtime_size_errors;
}

embedded_tests! {
    pad_modes_every_dtype => pad_modes_every_dtype;
    tile_and_repeat_interleave_every_dtype => repeats_every_dtype;
    join_and_split_every_dtype => every_dtype;
}
