//! Hostile inputs (issue 18): shapes too large to address, allocations larger than memory, graphs too long to
//! drop recursively, parameters resized behind the optimizer's back, crafted files and names, and where a
//! runtime panic points. Each case failed (or crashed the process) before the fix it names.

use crate::common::{panic_location, panic_message};
use typed_tensor::autograd::{Traced, Var};
use typed_tensor::device::CpuStorage;
use typed_tensor::layout::Layout;
use typed_tensor::ops::MatmulKernels;
use typed_tensor::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use typed_tensor::prelude::*;
use typed_tensor::shape::{Dims, MAX_ELEMENTS};

/// 3 x 0x5555_5555_5555_5556 is 2 modulo 2^64: a shape whose wrapped element count looks small.
const WRAPS_TO_2: (usize, usize) = (3, 0x5555_5555_5555_5556);

// ---- Shape arithmetic -------------------------------------------------------------------------------------

#[test]
fn checked_helpers_refuse_huge_dims() {
    let d = |s: &[usize]| Dims::from_slice(s);
    assert_eq!(d(&[2, 3, 4]).checked_numel(), Some(24));
    assert_eq!(d(&[]).checked_numel(), Some(1));
    assert_eq!(d(&[WRAPS_TO_2.0, WRAPS_TO_2.1]).checked_numel(), None);
    assert_eq!(d(&[1 << 32, 1 << 32]).checked_numel(), None); // 2^64 wraps to 0
    assert_eq!(d(&[MAX_ELEMENTS]).checked_numel(), Some(MAX_ELEMENTS));
    assert_eq!(d(&[MAX_ELEMENTS, 2]).checked_numel(), None);
    // An empty shape whose other dims' product (its dense strides) overflows is refused too.
    assert_eq!(d(&[0, 1 << 40, 1 << 40]).checked_numel(), None);
    assert_eq!(d(&[1 << 40, 0, 4]).checked_numel(), Some(0));
    // Bytes: a count that fits can still overflow once multiplied by the element size.
    assert_eq!(d(&[1 << 61]).try_bytes("t", 2), Ok(1 << 62));
    let err = d(&[1 << 61]).try_bytes("t", 8).unwrap_err();
    assert_eq!(
        err,
        Error::ShapeOverflow {
            op: "t",
            dims: d(&[1 << 61])
        }
    );
    assert_eq!(
        err.to_string(),
        "t: shape [2305843009213693952] is too large to address (more than isize::MAX elements or bytes)"
    );
    // `numel` never wraps: it panics with the same error.
    assert!(
        panic_message(|| d(&[WRAPS_TO_2.0, WRAPS_TO_2.1]).numel()).contains("too large to address")
    );

    // Extents: the last index a view reaches, checked.
    let l = Layout::from_parts(d(&[2, 3]), &[3, 1], 0);
    assert_eq!(l.storage_extent(), Some(6));
    assert_eq!(
        Layout::from_parts(d(&[2, 2]), &[1 << 63, 1 << 63], 0).storage_extent(),
        None // 2^64 + 1 wrapped to 1 before
    );
    assert_eq!(
        Layout::from_parts(d(&[0, 5]), &[1 << 63, 1 << 63], usize::MAX).storage_extent(),
        Some(0)
    );
    assert_eq!(
        Layout::from_parts(d(&[1]), &[1], usize::MAX).storage_extent(),
        None
    );
}

#[test]
fn constructors_refuse_shapes_too_large_to_address() {
    type R2 = (usize, usize);
    let overflow = |op| Error::ShapeOverflow {
        op,
        dims: Dims::from_slice(&[WRAPS_TO_2.0, WRAPS_TO_2.1]),
    };
    // The case: accepted before, since the count wrapped to the vector's length.
    assert_eq!(
        Tensor::<f32, R2, Cpu>::from_vec_with_shape(WRAPS_TO_2, vec![1., 2.]).unwrap_err(),
        overflow("from_vec")
    );
    assert_eq!(
        Tensor::<f32, R2, Cpu>::from_slice_with_shape(WRAPS_TO_2, &[1., 2.]).unwrap_err(),
        overflow("from_slice")
    );
    assert_eq!(
        Tensor::<f32, R2, Cpu>::try_full_with_shape(WRAPS_TO_2, 0.0).unwrap_err(),
        overflow("full")
    );
    assert_eq!(
        panic_message(|| Tensor::<f32, R2, Cpu>::zeros_with_shape(WRAPS_TO_2)),
        overflow("full").to_string()
    );
    assert_eq!(
        panic_message(|| Tensor::<f32, R2, Cpu>::rand_with_shape(WRAPS_TO_2, 0)),
        overflow("rand").to_string()
    );
    // The element count fits, the bytes do not.
    assert!(matches!(
        Tensor::<f64, (usize,), Cpu>::try_full_with_shape((1 << 61,), 0.0),
        Err(Error::ShapeOverflow { op: "full", .. })
    ));
    // A static shape whose count overflows is refused the same way (at run time: the dims are constants).
    let msg = panic_message(Tensor::<u8, Rank3<{ 1 << 30 }, { 1 << 30 }, { 1 << 30 }>, Cpu>::zeros);
    assert_eq!(
        msg,
        "full: shape [1073741824, 1073741824, 1073741824] is too large to address (more than isize::MAX elements or bytes)"
    );
}

#[test]
fn try_constructors_report_allocations_larger_than_memory() {
    // 2^46 f32 are 256 TiB, past any x86-64 or aarch64 user address space: the allocator refuses whatever
    // the overcommit policy, and `try_` returns the error where `vec!` would abort the process.
    let huge = (1usize << 46,);
    for value in [0.0, 1.0] {
        // (zeros come from zeroed pages, other values from a reserved vector: both paths are fallible)
        assert_eq!(
            Tensor::<f32, (usize,), Cpu>::try_full_with_shape(huge, value).unwrap_err(),
            Error::OutOfMemory {
                op: "full",
                bytes: 1 << 48
            }
        );
    }
    assert_eq!(
        Tensor::<f32, (usize,), Cpu>::try_full_with_shape(huge, 0.0)
            .unwrap_err()
            .to_string(),
        "full: out of memory allocating 281474976710656 bytes"
    );
    // A request that fits works as before.
    let t = Tensor::<f32, (usize,), Cpu>::try_full_with_shape((100,), 2.5).unwrap();
    assert_eq!(t.sum_all().to_scalar(), 250.0);
}

#[test]
fn ops_refuse_outputs_too_large_to_address() {
    let one = Tensor::<f32, (usize, usize), Cpu>::full_with_shape((1, 1), 1.0);
    // Broadcast views cost nothing, so a product of two of them can promise more elements than exist.
    let tall = one.broadcast_with_shape(((1 << 62) + 1, 1));
    let wide = one.broadcast_with_shape((1, 4));
    let err = tall.try_matmul(&wide).unwrap_err();
    assert_eq!(
        err,
        Error::ShapeOverflow {
            op: "matmul",
            dims: Dims::from_slice(&[(1 << 62) + 1, 4])
        }
    );
    // The batched case cannot even be viewed: (2^20, 1, 2^44) has 2^64 elements.
    let cube = Tensor::<f32, (usize, usize, usize), Cpu>::full_with_shape((1, 1, 1), 1.0);
    assert!(matches!(
        cube.try_broadcast_with_shape((1 << 20, 1, 1 << 44)),
        Err(Error::ShapeOverflow {
            op: "broadcast",
            ..
        })
    ));
    // Joins whose output would be too large.
    let half =
        Tensor::<f32, (usize,), Cpu>::full_with_shape((1,), 0.0).broadcast_with_shape((1 << 62,));
    assert!(matches!(
        half.try_cat::<Axis<0>, 4, _>(&half), // 2^63 elements
        Err(Error::ShapeOverflow { op: "cat", .. })
    ));
    let rows = Tensor::<f32, (usize, usize), Cpu>::full_with_shape((1, 1), 0.0)
        .broadcast_with_shape((1 << 61, 1));
    assert!(matches!(
        rows.try_pad::<Axis<1>, 3, 4, 8>(),
        Err(Error::ShapeOverflow { op: "pad", .. })
    ));
    assert!(matches!(
        Tensor::try_stack::<Axis<0>, 8>(&core::array::from_fn(|_| rows.clone())),
        Err(Error::ShapeOverflow { op: "stack", .. })
    ));
    let ids =
        Tensor::<u32, (usize,), Cpu>::full_with_shape((1,), 0).broadcast_with_shape((1 << 62,));
    let table = Tensor::<f32, Rank2<2, 4>, Cpu>::zeros();
    assert!(matches!(
        table.try_embedding(&ids),
        Err(Error::ShapeOverflow {
            op: "embedding",
            ..
        })
    ));
    assert!(matches!(
        table.try_index_select::<Axis<1>, _, _>(&ids),
        Err(Error::ShapeOverflow {
            op: "index_select",
            ..
        })
    ));
}

/// The CPU matmul kernel is public (`MatmulKernels`); a hand-built layout whose extent wraps past `usize::MAX`
/// passed its bounds assertion and sent gemm to read far outside the buffer. Now it panics before gemm.
#[test]
fn cpu_matmul_kernel_refuses_layouts_past_the_buffer() {
    let a = CpuStorage::from_slice(&[1f32; 2]);
    let b = CpuStorage::from_slice(&[1f32; 600]);
    // [1, 2, 2] with strides 2^63: the last index is 2^64 + 1, which wrapped to 1 (< 2 elements).
    let la = Layout::from_parts(Dims::from_slice(&[1, 2, 2]), &[0, 1 << 63, 1 << 63], 0);
    let lb = Layout::contiguous(Dims::from_slice(&[1, 2, 300]));
    let msg = panic_message(|| {
        let mut out = vec![std::mem::MaybeUninit::<f32>::uninit(); 600];
        <Cpu as MatmulKernels>::matmul::<f32>((&a[..], &la), (&b[..], &lb), &mut out)
    });
    assert!(msg.contains("reaches past its buffer"), "{msg}");
}

// ---- Long graphs ------------------------------------------------------------------------------------------

/// Runs `f` on a thread with a 2 MiB stack (the default for spawned threads): recursion over a long graph
/// overflowed it and aborted the whole process.
fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    crate::common::on_stack(2 << 20, f)
}

const CHAIN: usize = 1_000_000;

#[test]
fn a_million_op_graph_drops_without_recursion() {
    on_small_stack(|| {
        let w = Var::new(Tensor::<f32, Rank0, Cpu>::full(1.0));
        let mut h = w.trace();
        for _ in 0..CHAIN {
            h = &h * 1.0; // an RNN-style loop that is never back-propagated
        }
        assert_eq!(h.to_scalar(), 1.0);
        drop(h);
    });
}

#[test]
fn a_million_op_graph_back_propagates_without_recursion() {
    let g = on_small_stack(|| {
        let w = Var::new(Tensor::<f32, Rank0, Cpu>::full(1.0));
        let mut h: Traced<f32, Rank0, Cpu> = w.trace();
        for i in 0..CHAIN {
            h = if i % 2 == 0 { &h + 1.0 } else { &h * 1.0 };
        }
        h.backward().get(&w).to_scalar()
    });
    assert_eq!(g, 1.0);
}

// ---- Parameters keep their shape ----------------------------------------------------------------------------

type Rows = (usize, Const<2>);

#[test]
fn var_refuses_another_runtime_size() {
    let w = Var::new(Tensor::<f32, Rows, Cpu>::ones_with_shape((3, Const)));
    let bigger = Tensor::<f32, Rows, Cpu>::zeros_with_shape((4, Const));
    let err = w.try_set(bigger.clone()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Var::set: shapes [3, 2] and [4, 2] do not match"
    );
    assert_eq!(w.value().to_vec(), [1.; 6], "the old value stays");
    assert_eq!(panic_message(|| w.set(bigger.clone())), err.to_string());
    // update: a closure that swaps in another size is undone.
    let err = w.try_update(|v| *v = bigger.clone()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Var::update: shapes [3, 2] and [4, 2] do not match"
    );
    assert_eq!(w.value().to_vec(), [1.; 6]);
    // Same size: accepted, and in-place ops still work.
    w.set(Tensor::full_with_shape((3, Const), 2.0));
    w.update(|v| *v += 1.0);
    assert_eq!(w.value().to_vec(), [3.; 6]);
}

/// The scenario: a refused resize leaves the optimizer's state (momentum, Adam's moments and step
/// count) exactly as if it had not been tried.
#[test]
fn optimizer_state_survives_a_refused_resize() {
    let run = |try_resize: bool, adam: bool| {
        let w = Var::new(
            Tensor::<f64, Rows, Cpu>::from_vec_with_shape((2, Const), vec![1., -2., 3., 0.5])
                .unwrap(),
        );
        let mut opt: Box<dyn Optimizer> = if adam {
            Box::new(Adam::new(
                &w,
                AdamConfig {
                    lr: 0.1,
                    ..Default::default()
                },
            ))
        } else {
            Box::new(Sgd::new(
                &w,
                SgdConfig {
                    lr: 0.1,
                    momentum: 0.9,
                    ..Default::default()
                },
            ))
        };
        for step in 0..4 {
            if try_resize && step == 2 {
                assert!(w.try_set(Tensor::zeros_with_shape((5, Const))).is_err());
            }
            let grads = w.trace().sqr().sum_all().backward();
            opt.try_step(&grads).unwrap();
        }
        w.value().to_vec()
    };
    for adam in [false, true] {
        assert_eq!(run(true, adam), run(false, adam));
    }
}

// ---- Files and names ------------------------------------------------------------------------------------------

#[cfg(feature = "safetensors")]
mod files {
    use super::*;
    use typed_tensor::io::{from_bytes, save, to_bytes, write_static, SafetensorsError};

    /// A model naming two parameters `w` (a hand-written `Parameters` can).
    struct Twice<'a>(&'a Var<f32, Rank1<2>, Cpu>, &'a Var<f32, Rank1<3>, Cpu>);
    impl typed_tensor::nn::Parameters for Twice<'_> {
        fn visit_params<V: typed_tensor::nn::ParamVisitor>(&self, _: &str, v: &mut V) {
            v.visit("w", self.0);
            v.visit("w", self.1);
        }
    }

    #[test]
    fn duplicate_names_are_errors_not_panics() {
        let a = Var::new(Tensor::<f32, Rank1<2>, Cpu>::ones());
        let b = Var::new(Tensor::<f32, Rank1<3>, Cpu>::zeros());
        // Saving panicked inside the safetensors crate.
        let err = to_bytes(&Twice(&a, &b)).unwrap_err();
        assert!(matches!(err, SafetensorsError::Duplicate { op: "save", ref name } if name == "w"));
        assert_eq!(
            err.to_string(),
            "save: the model has two parameters named `w`"
        );
        // Loading assigned one stored tensor to both (or failed halfway, `b` having another shape).
        let bytes = to_bytes(&(a.clone(),)).unwrap(); // one tensor, named "0"
        struct Zero<'a>(Twice<'a>);
        impl typed_tensor::nn::Parameters for Zero<'_> {
            fn visit_params<V: typed_tensor::nn::ParamVisitor>(&self, _: &str, v: &mut V) {
                v.visit("0", self.0 .0);
                v.visit("0", self.0 .1);
            }
        }
        let fresh = Var::new(Tensor::<f32, Rank1<2>, Cpu>::zeros());
        let err = from_bytes(&Zero(Twice(&fresh, &b)), &bytes).unwrap_err();
        assert_eq!(
            err.to_string(),
            "load: the model has two parameters named `0`"
        );
        assert_eq!(fresh.value().to_vec(), [0., 0.], "nothing assigned");
    }

    #[test]
    fn a_failed_load_changes_nothing() {
        let saved = (
            Var::new(Tensor::<f32, Rank1<2>, Cpu>::from_array([5., 6.])),
            Var::new(Tensor::<f32, Rank1<3>, Cpu>::from_array([7., 8., 9.])),
        );
        let bytes = to_bytes(&saved).unwrap();
        // The first parameter matches the file, the second does not: before, the first was assigned anyway.
        let model = (
            Var::new(Tensor::<f32, Rank1<2>, Cpu>::zeros()),
            Var::new(Tensor::<f32, Rank1<4>, Cpu>::zeros()),
        );
        let err = from_bytes(&model, &bytes).unwrap_err();
        assert!(matches!(err, SafetensorsError::Shape { .. }), "{err}");
        assert_eq!(model.0.value().to_vec(), [0., 0.]);
        // Tensors the model does not declare are found before anything is assigned, too.
        let fewer = (Var::new(Tensor::<f32, Rank1<2>, Cpu>::zeros()),);
        assert!(matches!(
            from_bytes(&fewer, &bytes),
            Err(SafetensorsError::Unexpected { .. })
        ));
        assert_eq!(fewer.0.value().to_vec(), [0., 0.]);
    }

    #[test]
    fn save_errors_say_save() {
        let w = Var::new(Tensor::<f32, Rank1<2>, Cpu>::ones());
        let err = save(&w, "/nonexistent-dir/typed-tensor/w.safetensors").unwrap_err();
        assert!(matches!(err, SafetensorsError::Io { op: "save", .. }));
        assert!(err.to_string().starts_with("save: "), "{err}");
    }

    #[test]
    fn write_static_refuses_names_that_are_not_identifiers() {
        let w = Tensor::<f32, Rank1<1>, Cpu>::zeros();
        for bad in [
            "W: f32 = 0.0; pub fn injected() {} pub static X",
            "",
            "1W",
            "W-1",
            "É",
            "r#W",
            "type",
            "_",
        ] {
            let mut out = String::new();
            let err = write_static(&mut out, bad, &w).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidArgument {
                        op: "write_static",
                        ..
                    }
                ),
                "{bad:?}: {err}"
            );
            assert!(out.is_empty(), "{bad:?}: nothing is written");
        }
        for good in ["W", "_w1", "LAYER_0_WEIGHT", "Type"] {
            write_static(&mut String::new(), good, &w).unwrap();
        }
    }
}

// ---- Where panics point -----------------------------------------------------------------------------------

/// A runtime shape panic names the user's line, not the library's: every panicking form carries
/// `#[track_caller]` down to the panic.
#[test]
fn runtime_panics_point_at_the_callers_line() {
    let here = file!();
    let a = Tensor::<f32, Rows, Cpu>::zeros_with_shape((2, Const));
    let b = Tensor::<f32, Rows, Cpu>::zeros_with_shape((3, Const));
    let m = Tensor::<f32, (usize, usize), Cpu>::zeros_with_shape((2, 3));
    let empty = Tensor::<f32, (Const<2>, usize), Cpu>::zeros_with_shape((Const, 0));
    let w = Var::new(a.clone());
    type Case<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let cases: Vec<Case> = vec![
        ("a + b", Box::new(|| drop(&a + &b))),
        (
            "a.clone() - b.clone()",
            Box::new(|| drop(a.clone() - b.clone())),
        ),
        ("a * &b", Box::new(|| drop(a.clone() * &b))),
        ("a.maximum(b)", Box::new(|| drop(a.maximum(&b)))),
        ("a.lt(b)", Box::new(|| drop(a.lt(&b)))),
        (
            "a += b",
            Box::new(|| {
                let mut c = a.clone();
                c += &b;
            }),
        ),
        (
            "a.add_into",
            Box::new(|| {
                let mut out = a.clone();
                a.add_into(&b, &mut out);
            }),
        ),
        ("matmul", Box::new(|| drop(m.matmul(&m)))),
        ("cat", Box::new(|| drop(a.cat::<Axis<0>, 4, _>(&b)))),
        ("split", Box::new(|| drop(b.split::<Axis<0>, 2, 2>()))),
        ("pad", Box::new(|| drop(b.pad::<Axis<0>, 1, 1, 4>()))),
        ("reshape", Box::new(|| drop(b.reshape::<Rank1<4>>()))),
        ("squeeze", Box::new(|| drop(b.squeeze::<Axis<0>>()))),
        ("broadcast", Box::new(|| drop(b.broadcast::<Rank2<2, 2>>()))),
        ("i", Box::new(|| drop(b.i(7)))),
        ("max", Box::new(|| drop(empty.max::<Axis<1>>()))),
        ("argmin_all", Box::new(|| drop(empty.argmin_all()))),
        (
            "full_with_shape",
            Box::new(|| {
                drop(Tensor::<f32, (usize, usize), Cpu>::zeros_with_shape(
                    WRAPS_TO_2,
                ))
            }),
        ),
        ("Var::set", Box::new(|| w.set(b.clone()))),
        ("traced add", Box::new(|| drop(&w.trace() + &b))),
        (
            "traced matmul",
            Box::new(|| drop(Traced::constant(m.clone()).matmul(&m))),
        ),
    ];
    for (what, f) in cases {
        let (msg, file, _) = panic_location(f);
        assert_eq!(file, here, "{what} panicked at {file} ({msg})");
    }
}

// ---- The loader under mutation ------------------------------------------------------------------------------

/// Thousands of seeded mutations of a valid file (bit flips, truncations, header edits, spliced bytes): each
/// load returns `Ok` or a named error, never panics, and a failed load leaves the model as it was.
#[cfg(feature = "safetensors")]
#[test]
fn loader_survives_mutated_files() {
    use typed_tensor::io::{from_bytes, to_bytes};
    use typed_tensor::nn::{LayerNorm, Linear};
    type Model = (
        Linear<f32, 3, 4, Cpu>,
        LayerNorm<f32, 4, Cpu>,
        Var<f64, Rank1<2>, Cpu>,
    );
    let model = |seed| -> Model {
        (
            Linear::new(seed),
            LayerNorm::new(1e-5),
            Var::new(Tensor::randn(seed + 1)),
        )
    };
    let valid = to_bytes(&model(1)).unwrap();
    let header_len = u64::from_le_bytes(valid[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&valid[8..8 + header_len])
        .unwrap()
        .to_owned();
    let snapshot = |m: &Model| {
        (
            m.0.weight.value().to_vec(),
            m.0.bias.value().to_vec(),
            m.1.weight.value().to_vec(),
            m.2.value().to_vec(),
        )
    };
    let target = model(7);
    let before = snapshot(&target);
    let mut rng = crate::common::Rng::new(18);
    let mut loaded = 0;
    let mut errors = std::collections::BTreeMap::<String, usize>::new();
    for case in 0..4000 {
        let mut bytes = valid.clone();
        match case % 6 {
            0 => {
                // Flip 1 to 8 random bits anywhere.
                for _ in 0..1 + rng.next_u64() % 8 {
                    let bit = (rng.next_u64() % (bytes.len() as u64 * 8)) as usize;
                    bytes[bit / 8] ^= 1 << (bit % 8);
                }
            }
            1 => bytes.truncate((rng.next_u64() % bytes.len() as u64) as usize),
            2 => {
                // Rewrite one number of the JSON header (shapes, offsets): to 0, to huge, or off by one.
                let digits: Vec<usize> = header
                    .match_indices(|c: char| c.is_ascii_digit())
                    .map(|(i, _)| i)
                    .collect();
                let at = digits[(rng.next_u64() % digits.len() as u64) as usize];
                let replacement = ["0", "18446744073709551615", "9", "4294967296", "1"]
                    [(rng.next_u64() % 5) as usize];
                let mut h = header.clone();
                h.replace_range(at..at + 1, replacement);
                bytes = [
                    &(h.len() as u64).to_le_bytes()[..],
                    h.as_bytes(),
                    &valid[8 + header_len..],
                ]
                .concat();
            }
            3 => {
                // Change the header's length field.
                let len = match rng.next_u64() % 3 {
                    0 => rng.next_u64(),
                    1 => header_len as u64 + 1 + rng.next_u64() % 16,
                    _ => (header_len as u64).saturating_sub(1 + rng.next_u64() % 16),
                };
                bytes[..8].copy_from_slice(&len.to_le_bytes());
            }
            4 => bytes = semantic_edit(&valid, &mut rng),
            _ => {
                // Splice random bytes into the header or the data.
                let at = (rng.next_u64() % bytes.len() as u64) as usize;
                let junk: Vec<u8> = (0..1 + rng.next_u64() % 8)
                    .map(|_| rng.next_u64() as u8)
                    .collect();
                bytes.splice(at..at, junk);
            }
        }
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| from_bytes(&target, &bytes)));
        match result {
            Ok(Ok(())) => {
                loaded += 1;
                // A mutation the format accepts (a flipped data bit, say) loads; put the model back.
                from_bytes(&target, &to_bytes(&model(7)).unwrap()).unwrap();
            }
            Ok(Err(e)) => {
                let kind = format!("{e:?}");
                *errors
                    .entry(kind[..kind.find([' ', '{', '(']).unwrap_or(kind.len())].to_owned())
                    .or_default() += 1;
                assert!(e.to_string().starts_with("load: "), "case {case}: {e}");
                assert_eq!(
                    snapshot(&target),
                    before,
                    "case {case}: a failed load changed the model ({e})"
                );
            }
            Err(_) => panic!("case {case}: the loader panicked"),
        }
    }
    // The mutations reach past the format check: some files load, and the errors come from every stage (a
    // fuzz test that only ever fails at the first byte tests little).
    assert!(loaded > 0, "{errors:?}");
    for kind in ["Format", "Missing", "Unexpected", "DType", "Shape"] {
        assert!(
            errors.get(kind).is_some_and(|&n| n > 10),
            "{kind}: {loaded} loaded, errors {errors:?}"
        );
    }
}

/// A well-formed file that differs from `valid` in one tensor: renamed, dropped, added, stored with another
/// dtype or another shape (so that the loader's own checks, not the format's, must catch it).
#[cfg(feature = "safetensors")]
fn semantic_edit(valid: &[u8], rng: &mut crate::common::Rng) -> Vec<u8> {
    use safetensors::tensor::{Dtype, SafeTensors, TensorView};
    let file = SafeTensors::deserialize(valid).unwrap();
    let mut tensors: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = file
        .tensors()
        .into_iter()
        .map(|(name, v)| (name, v.dtype(), v.shape().to_vec(), v.data().to_vec()))
        .collect();
    let pick = (rng.next_u64() % tensors.len() as u64) as usize;
    match rng.next_u64() % 5 {
        0 => tensors[pick].0.push('x'),
        1 => drop(tensors.remove(pick)),
        2 => tensors.push(("extra".into(), Dtype::F32, vec![1], vec![0; 4])),
        3 => {
            let t = &mut tensors[pick];
            let (dtype, size) = [
                (Dtype::F16, 2),
                (Dtype::F64, 8),
                (Dtype::U8, 1),
                (Dtype::I64, 8),
            ][(rng.next_u64() % 4) as usize];
            t.1 = dtype;
            t.3 = vec![0x3c; t.2.iter().product::<usize>() * size];
        }
        _ => {
            let t = &mut tensors[pick];
            t.2 = if t.2.len() > 1 && t.2[0] != t.2[1] {
                t.2.iter().rev().copied().collect() // same count, other shape
            } else {
                [&t.2[..], &[1]].concat() // one more axis
            };
        }
    }
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            (
                name.clone(),
                TensorView::new(*dtype, shape.clone(), data).unwrap(),
            )
        })
        .collect();
    safetensors::serialize(views, &None).unwrap()
}
