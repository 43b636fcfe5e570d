//! The tensor core: creation, extraction, views, indexing, runtime-sized dims, errors and printing.

use crate::common::panic_message;

use typed_tensor::prelude::*;
use typed_tensor::Error;

fn creation<D: Device>() {
    assert_eq!(
        Tensor::<f32, Rank2<2, 2>, D>::zeros().to_array(),
        [[0.0; 2]; 2]
    );
    assert_eq!(Tensor::<u8, Rank1<3>, D>::ones().to_array(), [1, 1, 1]);
    assert_eq!(Tensor::<i64, Rank1<2>, D>::full(-4).to_array(), [-4, -4]);
    assert_eq!(
        Tensor::<bf16, Rank1<3>, D>::arange().to_vec(),
        [0.0, 1.0, 2.0].map(bf16::from_f32)
    );
    assert_eq!(Tensor::<u32, Rank0, D>::full(9).to_scalar(), 9);

    let a = Tensor::<f64, _, D>::from_array([[[1., 2.], [3., 4.]], [[5., 6.], [7., 8.]]]);
    let _: &Tensor<f64, Rank3<2, 2, 2>, D> = &a;
    assert_eq!(a.to_array(), [[[1., 2.], [3., 4.]], [[5., 6.], [7., 8.]]]);
    let s = Tensor::<f16, _, D>::from_array(f16::from_f32(2.5));
    let _: &Tensor<f16, Rank0, D> = &s;
    assert_eq!(s.to_scalar(), f16::from_f32(2.5));
    let empty = Tensor::<f32, _, D>::from_array([[0.0f32; 0]; 3]);
    let _: &Tensor<f32, Rank2<3, 0>, D> = &empty;
    assert_eq!(empty.to_array(), [[0.0f32; 0]; 3]);
    assert_eq!((&empty + &empty).numel(), 0);
    assert_eq!(empty.t().contiguous().to_vec(), Vec::<f32>::new());
    let r6 = Tensor::<u8, _, D>::from_array([[[[[[1u8, 2]]]]]]);
    assert_eq!(r6.dims().as_slice(), &[1, 1, 1, 1, 1, 2]);

    // Seeded random data: reproducible, in range, and roughly standard normal.
    let u = Tensor::<f32, Rank1<1000>, D>::rand(3).to_vec();
    assert_eq!(u, Tensor::<f32, Rank1<1000>, D>::rand(3).to_vec());
    assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    assert_ne!(u, Tensor::<f32, Rank1<1000>, D>::rand(4).to_vec());
    let z = Tensor::<f64, Rank1<4000>, D>::randn(5).to_vec();
    let mean = z.iter().sum::<f64>() / z.len() as f64;
    let var = z.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / z.len() as f64;
    assert!(
        mean.abs() < 0.06 && (var - 1.0).abs() < 0.08,
        "mean {mean} var {var}"
    );
    uniform_is_rand_affine::<f32, D>();
    uniform_is_rand_affine::<f64, D>();
    uniform_is_rand_affine::<f16, D>();
    uniform_is_rand_affine::<bf16, D>();
}

/// `uniform(low, high, seed)` gives the values of `rand(seed).affine(high - low, low)` (how the layers were
/// initialised before it existed), computed on the CPU, on every device; the runtime-shaped form on the CPU.
fn uniform_is_rand_affine<T: FloatDType, D: Device>() {
    let bound = 1.0 / 7f64.sqrt();
    let want = Tensor::<T, Rank2<9, 13>, Cpu>::rand(21)
        .affine(2.0 * bound, -bound)
        .to_vec();
    let got = Tensor::<T, Rank2<9, 13>, D>::uniform(-bound, bound, 21).to_vec();
    assert_eq!(got, want, "{:?}", T::DTYPE);
    // In range up to the roundings to `T` (three, each at most half a bf16 ulp of the bound).
    let tol = bound / 128.0;
    assert!(
        got.iter()
            .all(|&x| (-bound - tol..=bound + tol).contains(&x.to_f64())),
        "{:?}",
        T::DTYPE
    );
    // (`Embedded` holds static shapes only.)
    let runtime =
        Tensor::<T, (usize, Const<13>), Cpu>::uniform_with_shape((9, Const), -bound, bound, 21);
    assert_eq!(runtime.to_vec(), want, "{:?}", T::DTYPE);
}

fn bad_lengths<D: Device>() {
    let err = Tensor::<f32, Rank2<2, 3>, D>::from_vec(vec![0.0; 5]).unwrap_err();
    assert_eq!(
        err,
        Error::LengthMismatch {
            op: "from_vec",
            shape: Dims::from_slice(&[2, 3]),
            expected: 6,
            found: 5
        }
    );
    assert_eq!(
        err.to_string(),
        "from_vec: shape [2, 3] needs 6 elements, found 5"
    );
    assert!(Tensor::<u8, Rank1<2>, D>::from_slice(&[1, 2, 3]).is_err());
    assert!(
        Tensor::<f32, (usize, Const<2>), D>::from_vec_with_shape((3, Const), vec![0.0; 5]).is_err()
    );
}

use typed_tensor::shape::Dims;

fn views<D: Device>() {
    let a: Tensor<f32, Rank3<2, 3, 4>, D> = Tensor::arange();
    let v: Vec<f32> = (0..24).map(|x| x as f32).collect();

    let t = a.transpose::<Axis<0>, Axis<2>>();
    let _: &Tensor<f32, Rank3<4, 3, 2>, D> = &t;
    // A strided view where views share the buffer, a dense copy on the embedded device.
    assert_eq!(t.is_contiguous(), !crate::common::views_share::<D>());
    let want: Vec<f32> = (0..24)
        .map(|k| v[(k % 2) * 12 + ((k / 2) % 3) * 4 + k / 6])
        .collect();
    assert_eq!(t.to_vec(), want);
    assert_eq!(t.contiguous().to_vec(), want);
    assert!(t.contiguous().is_contiguous());

    let p = a.permute::<(Axis<1>, Axis<2>, Axis<0>)>();
    let _: &Tensor<f32, Rank3<3, 4, 2>, D> = &p;
    let want: Vec<f32> = (0..24)
        .map(|k| v[(k % 2) * 12 + (k / 8) * 4 + (k / 2) % 4])
        .collect();
    assert_eq!(p.to_vec(), want);

    // Reshape of a contiguous tensor is free; of a strided view, it copies first.
    let r: Tensor<f32, Rank2<6, 4>, D> = a.reshape();
    assert_eq!(r.to_vec(), v);
    let rt: Tensor<f32, Rank1<24>, D> = t.reshape();
    assert_eq!(rt.to_vec(), t.to_vec());

    let n = a.narrow::<Axis<2>, 1, 2>();
    let _: &Tensor<f32, Rank3<2, 3, 2>, D> = &n;
    let want: Vec<f32> = (0..12).map(|k| v[(k / 2) * 4 + k % 2 + 1]).collect();
    assert_eq!(n.to_vec(), want);
    // A narrow of a transposed view.
    let nt = a.t_last().narrow::<Axis<0>, 1, 1>();
    assert_eq!(
        nt.to_vec(),
        [12., 16., 20., 13., 17., 21., 14., 18., 22., 15., 19., 23.]
    );

    let u = a.unsqueeze::<Axis<1>>();
    let _: &Tensor<f32, Rank4<2, 1, 3, 4>, D> = &u;
    assert_eq!(u.to_vec(), v);
    let back = u.squeeze::<Axis<1>>();
    let _: &Tensor<f32, Rank3<2, 3, 4>, D> = &back;
    let appended = a.unsqueeze::<Axis<3>>();
    let _: &Tensor<f32, Rank4<2, 3, 4, 1>, D> = &appended;

    let col = Tensor::<f32, _, D>::from_array([[1.], [2.]]);
    let b: Tensor<f32, Rank3<3, 2, 4>, D> = col.broadcast();
    assert_eq!(b.to_vec(), [[1.0; 4], [2.0; 4]].repeat(3).concat());
    assert_eq!(b.contiguous().to_vec(), b.to_vec());

    let m = Tensor::<i64, _, D>::from_array([[1, 2, 3], [4, 5, 6]]);
    assert_eq!(m.t().to_array(), [[1, 4], [2, 5], [3, 6]]);
    assert_eq!(m.t().t().to_array(), m.to_array());

    // Copies keep every bit: a signalling NaN stays signalling and -0 stays -0 (a round trip through f64, as a
    // cast takes, would quiet the NaN).
    let snan = f32::from_bits(0x7f80_0001);
    let s = Tensor::<f32, _, D>::from_array([[snan, 1.0, 3.0], [2.0, -0.0, 4.0]]);
    let bits = |t: &Tensor<f32, Rank2<3, 2>, D>| -> Vec<u32> {
        t.contiguous()
            .to_vec()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    };
    let want = [snan, 2.0, 1.0, -0.0, 3.0, 4.0].map(f32::to_bits);
    assert_eq!(bits(&s.t()), want);
    let snan16 = f16::from_bits(0x7c01);
    let h = Tensor::<f16, _, D>::from_array([[snan16, f16::ONE], [f16::NEG_ZERO, f16::MAX]]);
    let hbits: Vec<u16> = h
        .t()
        .contiguous()
        .to_vec()
        .iter()
        .map(|x| x.to_bits())
        .collect();
    assert_eq!(
        hbits,
        [0x7c01, f16::NEG_ZERO.to_bits(), 0x3c00, f16::MAX.to_bits()]
    );
}

/// Helper trait so the test can name a view of a view without spelling its type.
trait LastTwo<D: Device> {
    fn t_last(&self) -> Tensor<f32, Rank3<2, 4, 3>, D>;
}
impl<D: Device> LastTwo<D> for Tensor<f32, Rank3<2, 3, 4>, D> {
    fn t_last(&self) -> Tensor<f32, Rank3<2, 4, 3>, D> {
        self.transpose::<Axis<1>, Axis<2>>()
    }
}

fn indexing<D: Device>() {
    let a: Tensor<f32, Rank3<2, 3, 4>, D> = Tensor::arange();
    let row: Tensor<f32, Rank2<3, 4>, D> = a.i(1);
    assert_eq!(row.to_vec(), (12..24).map(|x| x as f32).collect::<Vec<_>>());
    let col: Tensor<f32, Rank2<2, 4>, D> = a.i((.., 2));
    assert_eq!(col.to_vec(), [8., 9., 10., 11., 20., 21., 22., 23.]);
    let last: Tensor<f32, Rank2<2, 3>, D> = a.i((.., .., 3));
    assert_eq!(last.to_vec(), [3., 7., 11., 15., 19., 23.]);
    let x: Tensor<f32, Rank0, D> = a.i((1, 0, 2));
    assert_eq!(x.to_scalar(), 14.0);
    assert_eq!(a.i((.., 1)).i(1).to_vec(), [16., 17., 18., 19.]);
    // Indexing a transposed view.
    let t = a.transpose::<Axis<0>, Axis<2>>();
    assert_eq!(t.i((3, .., 1)).to_vec(), [15., 19., 23.]);

    for (idx, axis, size) in [
        ((2usize, 0usize, 0usize), 0, 2),
        ((0, 3, 0), 1, 3),
        ((0, 0, 4), 2, 4),
    ] {
        let err = a.try_i(idx).unwrap_err();
        assert_eq!(
            err,
            Error::IndexOutOfRange {
                op: "i",
                axis,
                index: [idx.0, idx.1, idx.2][axis] as i128,
                size
            }
        );
    }
    assert_eq!(
        panic_message(|| a.i((.., 7))),
        "i: index 7 is out of range for axis 1 of size 3"
    );
}

fn runtime_dims<D: Device>() {
    type Batch = (usize, Const<3>);
    let x = Tensor::<f32, Batch, D>::from_vec_with_shape((2, Const), vec![1., 2., 3., 4., 5., 6.])
        .unwrap();
    let bias = Tensor::<f32, _, D>::from_array([10., 20., 30.]);
    let y = &x + &bias;
    let _: &Tensor<f32, Batch, D> = &y;
    assert_eq!(y.to_vec(), [11., 22., 33., 14., 25., 36.]);
    assert_eq!(y.shape(), (2, Const));
    assert_eq!(x.i(1).to_vec(), [4., 5., 6.]);
    let z = Tensor::<f32, Batch, D>::zeros_with_shape((3, Const));
    let err = x.try_binary(typed_tensor::ops::Add, &z).unwrap_err();
    assert_eq!(
        err.to_string(),
        "add: shapes [2, 3] and [3, 3] do not match"
    );
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| &x + &z));
    assert!(r.is_err());
}

/// Views of runtime-sized tensors that do not fit: `try_` forms return the error, the panicking forms panic with
/// its message.
fn runtime_view_errors<D: Device>() {
    let a = Tensor::<f32, (usize, Const<2>), D>::from_vec_with_shape(
        (3, Const),
        vec![1., 2., 3., 4., 5., 6.],
    )
    .unwrap();
    let r: Tensor<f32, Rank2<2, 3>, D> = a.try_reshape().unwrap();
    assert_eq!(r.to_array(), [[1., 2., 3.], [4., 5., 6.]]);
    let msg = "reshape: shape [4] needs 4 elements, found 6";
    assert_eq!(a.try_reshape::<Rank1<4>>().unwrap_err().to_string(), msg);
    assert_eq!(panic_message(|| a.reshape::<Rank1<4>>()), msg);

    let n = a.try_narrow::<Axis<0>, 1, 2>().unwrap();
    assert_eq!(n.to_vec(), [3., 4., 5., 6.]);
    let msg = "narrow: index 4 is out of range for axis 0 of size 3";
    assert_eq!(
        a.try_narrow::<Axis<0>, 2, 2>().unwrap_err().to_string(),
        msg
    );
    assert_eq!(panic_message(|| a.narrow::<Axis<0>, 2, 2>()), msg);

    let row = Tensor::<f32, (usize,), D>::from_vec_with_shape((2,), vec![7., 8.]).unwrap();
    let b = row.try_broadcast_with_shape((3, Const::<2>)).unwrap();
    assert_eq!(b.to_vec(), [7., 8., 7., 8., 7., 8.]);
    let msg = "broadcast: shapes [2] and [3, 4] do not match";
    assert_eq!(
        row.try_broadcast_with_shape((3, 4))
            .unwrap_err()
            .to_string(),
        msg
    );
    assert_eq!(panic_message(|| row.broadcast_with_shape((3, 4))), msg);
    assert_eq!(
        panic_message(|| row.broadcast::<Rank1<3>>()),
        "broadcast: shapes [2] and [3] do not match"
    );

    let one =
        Tensor::<f32, (usize, Const<2>), D>::from_vec_with_shape((1, Const), vec![7., 8.]).unwrap();
    assert_eq!(one.try_squeeze::<Axis<0>>().unwrap().to_array(), [7., 8.]);
    let msg = "squeeze: axis 0 has size 3, expected 1";
    assert_eq!(a.try_squeeze::<Axis<0>>().unwrap_err().to_string(), msg);
    assert_eq!(panic_message(|| a.squeeze::<Axis<0>>()), msg);
}

fn transfer_and_print<D: Device>() {
    let a = Tensor::<f32, _, D>::from_array([[1., 2.5], [-3., 4.]]);
    let host: Tensor<f32, Rank2<2, 2>, Cpu> = a.t().to_device::<Cpu>().unwrap();
    assert_eq!(host.to_array(), [[1., -3.], [2.5, 4.]]);
    let back: Tensor<f32, Rank2<2, 2>, D> = host.to_device::<D>().unwrap();
    assert_eq!(back.to_array(), [[1., -3.], [2.5, 4.]]);
    let dev = D::NAME;
    assert_eq!(
        a.to_string(),
        format!("tensor([[ 1.0000,  2.5000],\n        [-3.0000,  4.0000]], shape=[2, 2], dtype=f32, device={dev})")
    );
    assert_eq!(format!("{a:?}"), format!("Tensor[[2, 2], f32, {dev}]"));
    // A transposed view prints its own order (read in place through its strides where it is a view).
    assert_eq!(
        a.t().to_string(),
        format!("tensor([[ 1.0000, -3.0000],\n        [ 2.5000,  4.0000]], shape=[2, 2], dtype=f32, device={dev})")
    );
    let i = Tensor::<i64, _, D>::from_array([[[0, 1], [2, 3]], [[4, 5], [6, 70]]]);
    assert_eq!(
        i.to_string(),
        format!(
            "tensor([[[ 0,  1],\n         [ 2,  3]],\n\n        [[ 4,  5],\n         [ 6, 70]]], shape=[2, 2, 2], dtype=i64, device={dev})"
        )
    );
    let w = Tensor::<f64, _, D>::from_array([1., -2., 3.]);
    assert!(w.to_string().starts_with("tensor([ 1., -2.,  3.]"));
    let s = Tensor::<f32, _, D>::from_array([1e-6, 1.0, f32::NAN, f32::INFINITY]);
    assert!(
        s.to_string()
            .starts_with("tensor([1.0000e-06, 1.0000e+00,        nan,        inf]"),
        "{s}"
    );
    // Summarised: 3 items at each end of each axis.
    let big: Tensor<f32, Rank2<40, 50>, D> = Tensor::arange();
    let want = "\
tensor([[   0.,    1.,    2., ...,   47.,   48.,   49.],
        [  50.,   51.,   52., ...,   97.,   98.,   99.],
        [ 100.,  101.,  102., ...,  147.,  148.,  149.],
        ...,
        [1850., 1851., 1852., ..., 1897., 1898., 1899.],
        [1900., 1901., 1902., ..., 1947., 1948., 1949.],
        [1950., 1951., 1952., ..., 1997., 1998., 1999.]], shape=[40, 50], dtype=f32, device=";
    assert_eq!(big.to_string(), format!("{want}{dev})"));
}

/// eye, arange with a step, linspace and the `_like` constructors, for an integer and the float dtypes.
fn more_creation<D: Device>() {
    assert_eq!(
        Tensor::<u8, Rank2<3, 2>, D>::eye().to_array(),
        [[1, 0], [0, 1], [0, 0]]
    );
    assert_eq!(
        Tensor::<f64, Rank2<2, 2>, D>::eye().to_array(),
        [[1.0, 0.0], [0.0, 1.0]]
    );
    assert_eq!(
        Tensor::<i64, Rank1<4>, D>::arange_step(-3.0, 2.0).to_array(),
        [-3, -1, 1, 3]
    );
    assert_eq!(
        Tensor::<f32, Rank1<3>, D>::arange_step(0.5, -0.25).to_array(),
        [0.5, 0.25, 0.0]
    );
    // torch.linspace(-1, 1, 5) = [-1, -0.5, 0, 0.5, 1]; the ends are exact even when the step is not
    // (torch.linspace(0, 1, 7)[-1] == 1).
    assert_eq!(
        Tensor::<f32, Rank1<5>, D>::linspace(-1.0, 1.0).to_array(),
        [-1.0, -0.5, 0.0, 0.5, 1.0]
    );
    let seven = Tensor::<f64, Rank1<7>, D>::linspace(0.0, 1.0).to_array();
    assert_eq!((seven[0], seven[6]), (0.0, 1.0));
    assert!((seven[1] - 1.0 / 6.0).abs() < 1e-16 && (seven[5] - 5.0 / 6.0).abs() < 1e-15);
    assert_eq!(
        Tensor::<f16, Rank1<1>, D>::linspace(2.0, 9.0).to_vec(),
        [f16::from_f32(2.0)]
    );
    let x = Tensor::<bf16, Rank2<2, 3>, D>::arange();
    assert_eq!(x.zeros_like().to_vec(), [bf16::ZERO; 6]);
    assert_eq!(x.ones_like().to_vec(), [bf16::ONE; 6]);
    assert_eq!(
        x.t().full_like(bf16::from_f32(2.5)).to_array(),
        [[bf16::from_f32(2.5); 2]; 3]
    );
}

device_tests! {
    more_creation_eye_arange_linspace_like => more_creation;
    creation_and_extraction => creation;
    bad_lengths_are_errors => bad_lengths;
    views_share_and_copy_correctly => views;
    indexing_selects_and_checks_bounds => indexing;
    runtime_sized_dims => runtime_dims;
    runtime_sized_views_that_do_not_fit => runtime_view_errors;
    device_transfer_and_printing => transfer_and_print;
}

/// A small CPU tensor is its inline buffer (64 bytes, its length and kind) plus one word per stride and one for
/// the offset, rounded to whole 16-byte units: no room for unused axes. Moving one is a few vector copies.
#[test]
fn cpu_tensors_carry_only_their_own_axes() {
    use std::mem::size_of;
    assert!(size_of::<Tensor<f32, Rank2<4, 4>, Cpu>>() <= 112);
    assert!(size_of::<Tensor<f32, Rank0, Cpu>>() <= 96);
    assert!(size_of::<Tensor<f32, (usize, Const<3>), Cpu>>() <= 128); // a runtime dim is stored too
                                                                      // The view survives selecting, narrowing, transposing and broadcasting.
    let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::arange();
    let v = a.i(1).narrow::<Axis<0>, 1, 2>().t(); // (4, 2): rows 1 and 2 of the second matrix, transposed
    assert_eq!(
        v.to_array(),
        [[16., 20.], [17., 21.], [18., 22.], [19., 23.]]
    );
    assert_eq!(v.layout().strides(), &[1, 4]);
    assert_eq!(v.layout().offset(), 16);
    assert!(!v.is_contiguous() && v.contiguous().is_contiguous());
    let b: Tensor<f32, Rank3<3, 4, 2>, Cpu> = v.broadcast();
    assert_eq!(b.layout().strides(), &[0, 1, 4]);
    assert_eq!(b.i(2).to_array(), v.to_array());
}

/// Large CPU buffers go back to a cache when their last tensor drops, and the next output of the same byte size
/// takes one back (stale contents and all; another dtype of the same alignment may have written it). Every
/// output must still hold exactly its own values: zeros from `zeros`, the op's results, a transposed copy.
#[test]
fn cpu_outputs_in_reused_buffers_hold_their_own_values() {
    fn check<T: WithDType>(stale: T, x: T) {
        type S = Rank2<256, 160>; // 40960 elements: above the 128 KiB floor from f32 on, u8 stays below
        let a = Tensor::<T, S, Cpu>::full(x);
        for _ in 0..3 {
            drop(Tensor::<T, S, Cpu>::full(stale));
            assert!(Tensor::<T, S, Cpu>::zeros()
                .to_vec()
                .iter()
                .all(|&v| v == T::ZERO));
            drop(Tensor::<T, S, Cpu>::full(stale));
            let sum = &a + &a;
            let want = T::from_f64(2.0 * x.to_f64());
            assert!(sum.to_vec().iter().all(|&v| v == want), "{:?}", T::DTYPE);
            drop(sum);
            drop(Tensor::<T, S, Cpu>::full(stale));
            let src = Tensor::<T, S, Cpu>::arange();
            let t: Tensor<T, Rank2<160, 256>, Cpu> = src.t().contiguous();
            let (s, t) = (src.to_vec(), t.to_vec());
            for (k, &v) in t.iter().enumerate() {
                let (i, j) = (k / 256, k % 256); // t[i][j] = src[j][i]
                assert_eq!(v, s[j * 160 + i], "{:?}", T::DTYPE);
            }
        }
    }
    check::<f32>(f32::NAN, 1.5);
    check::<u32>(u32::MAX, 7);
    check::<f64>(f64::NAN, -2.25);
    check::<i64>(i64::MIN, -3);
    check::<f16>(f16::NAN, f16::from_f32(0.5));
    check::<bf16>(bf16::NAN, bf16::from_f32(4.0));
    check::<u8>(u8::MAX, 9);
}

embedded_tests! {
    more_creation_eye_arange_linspace_like => more_creation;
    creation_and_extraction => creation;
    views_share_and_copy_correctly => views;
    indexing_selects_and_checks_bounds => indexing;
    device_transfer_and_printing => transfer_and_print;
}

/// Axes counted from the end (PyTorch's negative dims) name the same axis as `Axis<RANK - N>` in every op that
/// takes one axis, at ranks 1 to 4, for tensors and traced values; `transpose::<FromEnd<2>, Last>` swaps the last
/// two.
#[test]
fn axes_from_the_end_are_the_axes_they_name() {
    let x = Tensor::<f32, Rank3<2, 3, 4>, Cpu>::randn(5);
    let other = Tensor::<f32, Rank3<2, 3, 1>, Cpu>::randn(6);
    assert_eq!(
        x.softmax::<Last>().to_vec(),
        x.softmax::<Axis<2>>().to_vec()
    );
    assert_eq!(x.sum::<FromEnd<3>>().to_vec(), x.sum::<Axis<0>>().to_vec());
    assert_eq!(
        x.argmax_keepdim::<FromEnd<2>>().to_vec(),
        x.argmax_keepdim::<Axis<1>>().to_vec()
    );
    assert_eq!(x.cumsum::<Last>().to_vec(), x.cumsum::<Axis<2>>().to_vec());
    assert_eq!(
        x.flip::<(Last, Axis<0>)>().to_vec(),
        x.flip::<(Axis<2>, Axis<0>)>().to_vec()
    );
    assert_eq!(
        x.narrow::<Last, 1, 2>().to_vec(),
        x.narrow::<Axis<2>, 1, 2>().to_vec()
    );
    let joined: Tensor<f32, Rank3<2, 3, 5>, Cpu> = x.cat::<Last, 5, _>(&other);
    assert_eq!(joined.to_vec(), x.cat::<Axis<2>, 5, _>(&other).to_vec());
    let (top, at) = x.topk::<Last, 2>(true);
    let (top2, at2) = x.topk::<Axis<2>, 2>(true);
    assert_eq!((top.to_vec(), at.to_vec()), (top2.to_vec(), at2.to_vec()));
    let kt: Tensor<f32, Rank3<2, 4, 3>, Cpu> = x.transpose::<FromEnd<2>, Last>();
    assert_eq!(kt.to_vec(), x.transpose::<Axis<1>, Axis<2>>().to_vec());
    assert_eq!(x.transpose::<Last, FromEnd<2>>().to_vec(), kt.to_vec());
    // Rank 1 and rank 4: the last axis is Axis<0> and Axis<3>.
    let v = Tensor::<f32, Rank1<5>, Cpu>::arange();
    assert_eq!(v.sum::<Last>().to_scalar(), 10.0);
    let y = Tensor::<f32, Rank4<2, 2, 3, 2>, Cpu>::randn(7);
    assert_eq!(
        y.layer_norm::<Last>(1e-5).to_vec(),
        y.layer_norm::<Axis<3>>(1e-5).to_vec()
    );
    assert_eq!(
        y.mean::<FromEnd<2>>().to_vec(),
        y.mean::<Axis<2>>().to_vec()
    );
    // Traced values take them too, with the same gradients.
    let w = typed_tensor::autograd::Var::new(x.clone());
    let g_end = w
        .trace()
        .log_softmax::<Last>()
        .flip::<FromEnd<2>>()
        .sqr()
        .sum_all()
        .backward()
        .get(&w);
    let g_axis = w
        .trace()
        .log_softmax::<Axis<2>>()
        .flip::<Axis<1>>()
        .sqr()
        .sum_all()
        .backward()
        .get(&w);
    assert_eq!(g_end.to_vec(), g_axis.to_vec());
}
