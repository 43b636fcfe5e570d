//! index_select, gather, scatter_add and embedding against naive references, with u32, i32 and i64 indices, on
//! strided sources and strided index tensors, for every dtype; bad indices give the documented error.

use crate::common::*;
use typed_tensor::prelude::*;
use typed_tensor::Error;

fn index_select_all_views<T: WithDType, D: Device, I: IndexDType>() {
    let rows = Tensor::<I, _, D>::from_array([4, 0, 4, 2].map(I::from_i64)); // picks along axis 0 (size 5)
                                                                             // A strided index vector: every other element of a longer one.
    let cols_src = Tensor::<I, _, D>::from_array([6, 9, 0, 9, 3, 9].map(I::from_i64));
    let cols = cols_src.reshape::<Rank2<3, 2>>().i((.., 0)); // [6, 0, 3], stride 2
    for v in views::<T, D>(61, 0.0, 100.0) {
        let got: Tensor<T, Rank2<4, N>, D> = v.tensor.index_select::<Axis<0>, _, _>(&rows);
        let want: Vec<T> = [4, 0, 4, 2]
            .iter()
            .flat_map(|&r| v.expected[r * N..(r + 1) * N].to_vec())
            .collect();
        assert_eq!(
            got.to_vec(),
            want,
            "index_select axis 0 of {} view [{}]",
            v.kind,
            T::DTYPE
        );
        let got: Tensor<T, Rank2<M, 3>, D> = v.tensor.index_select::<Axis<1>, _, _>(&cols);
        let want: Vec<T> = (0..M)
            .flat_map(|r| [6, 0, 3].map(|c| v.expected[r * N + c]))
            .collect();
        assert_eq!(
            got.to_vec(),
            want,
            "index_select axis 1 of {} view [{}]",
            v.kind,
            T::DTYPE
        );
    }
}

fn gather_and_scatter<T: WithDType, D: Device, I: IndexDType>() {
    let mut rng = Rng::new(62);
    // Indices for gather along axis 1: shape (5, 4), values in 0..7.
    let idx_vals: Vec<i64> = (0..M * 4)
        .map(|_| (rng.next_u64() % N as u64) as i64)
        .collect();
    let idx =
        Tensor::<I, Rank2<M, 4>, D>::from_vec(idx_vals.iter().map(|&x| I::from_i64(x)).collect())
            .unwrap();
    // Indices for axis 0 on a transposed (strided) index view: shape (3, 7), values in 0..5.
    let idx0_vals: Vec<i64> = (0..3 * N)
        .map(|_| (rng.next_u64() % M as u64) as i64)
        .collect();
    let idx0_t =
        Tensor::<I, Rank2<N, 3>, D>::from_vec(idx0_vals.iter().map(|&x| I::from_i64(x)).collect())
            .unwrap();
    let idx0 = idx0_t.t(); // (3, 7), strided
    let idx0_logical: Vec<usize> = idx0.to_vec().iter().map(|x| x.to_i64() as usize).collect();
    for v in views::<T, D>(63, 0.0, 50.0) {
        let got: Tensor<T, Rank2<M, 4>, D> = v.tensor.gather::<Axis<1>, _, _>(&idx);
        let want: Vec<T> = (0..M * 4)
            .map(|k| v.expected[(k / 4) * N + idx_vals[k] as usize])
            .collect();
        assert_eq!(
            got.to_vec(),
            want,
            "gather axis 1 of {} view [{}]",
            v.kind,
            T::DTYPE
        );
        let got: Tensor<T, Rank2<3, N>, D> = v.tensor.gather::<Axis<0>, _, _>(&idx0);
        let want: Vec<T> = (0..3 * N)
            .map(|k| v.expected[idx0_logical[k] * N + k % N])
            .collect();
        assert_eq!(
            got.to_vec(),
            want,
            "gather axis 0 of {} view [{}]",
            v.kind,
            T::DTYPE
        );

        // scatter_add along axis 1 into the view, with repeated indices accumulating.
        let src = Tensor::<T, Rank2<M, 4>, D>::full(T::from_f64(2.0));
        let got = v.tensor.scatter_add::<Axis<1>, _, _>(&idx, &src).to_vec();
        let mut want = v.expected.clone();
        for (k, &c) in idx_vals.iter().enumerate() {
            let at = (k / 4) * N + c as usize;
            want[at] = want[at].add(T::from_f64(2.0));
        }
        assert_eq!(
            got,
            want,
            "scatter_add axis 1 of {} view [{}]",
            v.kind,
            T::DTYPE
        );
    }
}

fn every_dtype<D: Device>() {
    fn both<T: WithDType, D: Device>() {
        index_select_all_views::<T, D, u32>();
        index_select_all_views::<T, D, i32>();
        index_select_all_views::<T, D, i64>();
        gather_and_scatter::<T, D, u32>();
        gather_and_scatter::<T, D, i32>();
        gather_and_scatter::<T, D, i64>();
    }
    both::<u8, D>();
    both::<u32, D>();
    both::<i8, D>();
    both::<i32, D>();
    both::<i64, D>();
    both::<f16, D>();
    both::<bf16, D>();
    both::<f32, D>();
    both::<f64, D>();
}

fn embedding_and_errors<D: Device>() {
    let table: Tensor<f32, Rank2<4, 3>, D> = Tensor::arange();
    let ids = Tensor::<u32, _, D>::from_array([[3, 0], [1, 3]]);
    let e: Tensor<f32, Rank3<2, 2, 3>, D> = table.embedding(&ids);
    assert_eq!(
        e.to_array(),
        [
            [[9., 10., 11.], [0., 1., 2.]],
            [[3., 4., 5.], [9., 10., 11.]]
        ]
    );
    let one: Tensor<f32, Rank1<3>, D> = table.embedding(&Tensor::<i64, Rank0, D>::full(2));
    assert_eq!(one.to_array(), [6., 7., 8.]);
    // A transposed table and a strided id vector.
    let tt: Tensor<f32, Rank2<3, 4>, D> = Tensor::arange();
    let ids_row = Tensor::<i64, _, D>::from_array([[1, 7], [2, 7]]).i((.., 0)); // [1, 2], stride 2
    let e: Tensor<f32, Rank2<2, 3>, D> = tt.t().embedding(&ids_row);
    assert_eq!(e.to_array(), [[1., 5., 9.], [2., 6., 10.]]);

    // Out-of-range and negative indices are errors naming op, axis, index and size.
    let x: Tensor<f32, Rank2<2, 3>, D> = Tensor::zeros();
    let err = x
        .try_index_select::<Axis<0>, _, _>(&Tensor::<u32, _, D>::from_array([0, 2]))
        .unwrap_err();
    assert_eq!(
        err,
        Error::IndexOutOfRange {
            op: "index_select",
            axis: 0,
            index: 2,
            size: 2
        }
    );
    let err = x
        .try_gather::<Axis<1>, _, _>(&Tensor::<i64, _, D>::from_array([[0], [-1]]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "gather: index -1 is out of range for axis 1 of size 3"
    );
    let err = x
        .try_index_select::<Axis<1>, _, _>(&Tensor::<i32, _, D>::from_array([1, -2]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "index_select: index -2 is out of range for axis 1 of size 3"
    );
    let err = table
        .try_embedding(&Tensor::<u32, _, D>::from_array([4]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "embedding: index 4 is out of range for axis 0 of size 4"
    );
    let src = Tensor::<f32, Rank2<2, 1>, D>::ones();
    let err = x
        .try_scatter_add::<Axis<1>, _, _>(&Tensor::<u32, _, D>::from_array([[1], [3]]), &src)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "scatter_add: index 3 is out of range for axis 1 of size 3"
    );
    assert_eq!(
        panic_message(|| {
            x.index_select::<Axis<1>, _, _>(&Tensor::<u32, _, D>::from_array([5]))
        }),
        "index_select: index 5 is out of range for axis 1 of size 3"
    );
    // The error names the index at the first bad position, whatever its size: u32 above i32::MAX, i64 beyond
    // the i32 range either way (the CUDA kernels record a value in 32 bits and read wider ones back).
    let first_bad = |ids: Tensor<i64, Rank1<4>, D>| {
        x.try_index_select::<Axis<1>, _, _>(&ids)
            .unwrap_err()
            .to_string()
    };
    for (ids, bad) in [
        ([0, 7, -3, 9], "7"),
        ([1, -5_000_000_000, 1 << 40, 2], "-5000000000"),
        ([2, 1, 1 << 40, -1], "1099511627776"),
        ([2, 1, 0, i64::from(i32::MAX)], "2147483647"),
        ([i64::from(i32::MIN), 1, 0, 9], "-2147483648"),
    ] {
        assert_eq!(
            first_bad(Tensor::from_array(ids)),
            format!("index_select: index {bad} is out of range for axis 1 of size 3")
        );
    }
    let err = x
        .try_index_select::<Axis<1>, _, _>(&Tensor::<u32, _, D>::from_array([1, 3_000_000_000]))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "index_select: index 3000000000 is out of range for axis 1 of size 3"
    );
    // Runtime-sized dims off the axis must agree.
    let r = Tensor::<f32, (usize, Const<3>), D>::zeros_with_shape((2, Const));
    let bad = Tensor::<u32, (usize, Const<1>), D>::zeros_with_shape((5, Const));
    assert!(matches!(
        r.try_gather::<Axis<1>, _, _>(&bad),
        Err(Error::ShapeMismatch { .. })
    ));
}

device_tests! {
    index_select_gather_scatter_every_dtype => every_dtype;
    embedding_and_index_errors => embedding_and_errors;
}

embedded_tests! {
    index_select_gather_scatter_every_dtype => every_dtype;
}
