//! Correctness at the edges (issue 42): zero-element tensors whose other dims are huge, which must cost nothing.
//! Each case failed (ran out of memory, aborted the process, or ran for minutes) before the fix it names.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use typed_tensor::autograd::Traced;
use typed_tensor::prelude::*;
use typed_tensor::Error;

type Runtime2 = (usize, usize);

/// This test's own process, re-run with `env` set under a limit of `limit_kib` on its address space (`ulimit
/// -v`) and `deadline`: the test passes when the child does. So an op that allocates gigabytes for an empty
/// result fails the test (the allocation fails in the child) instead of taking the machine's memory, and one
/// that walks 2^40 empty lanes fails at the deadline instead of hanging the suite.
fn in_limited_child(test: &str, env: &str, limit_kib: usize, deadline: Duration) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {limit_kib} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(env, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the test binary");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if start.elapsed() > deadline {
            child.kill().ok();
            panic!("{test}: still running after {deadline:?} (an op walks what it need not)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().expect("the child's output");
    assert!(
        status.success(),
        "{test} failed in its limited child ({status}):\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Checks that `y` is empty with `dims`.
fn empty_as<T: WithDType, S: Shape>(what: &str, y: Tensor<T, S, Cpu>, dims: &[usize]) {
    assert_eq!(y.dims().as_slice(), dims, "{what}");
    assert!(y.to_vec().is_empty(), "{what}");
}

/// Every shape-preserving op on `x` (empty, one dim huge), along both axes where it has one, and the reductions
/// whose result is empty too.
fn sweep_one(x: &Tensor<f32, Runtime2, Cpu>) {
    let dims = x.dims();
    let d = dims.as_slice();
    let same = |what: &str, y: Tensor<f32, Runtime2, Cpu>| empty_as(what, y, d);
    let mask = x.gt(x);
    let index = |what: &str, y: Tensor<u32, Runtime2, Cpu>| empty_as(what, y, d);

    // Elementwise, in place and masks.
    same("exp", x.exp());
    same("relu", x.relu());
    same("gelu", x.gelu());
    same("neg", -x);
    same("clamp", x.clamp(-1.0, 1.0));
    same("add", x + x);
    same("affine", x * 2.0 + 1.0);
    same("maximum", x.maximum(x));
    same("where_cond", mask.where_cond(x, x));
    same("masked_fill", x.masked_fill(&mask, 1.0));
    same("tril", x.tril(0));
    same("contiguous of t", x.t().contiguous().t());
    empty_as("isnan", x.isnan(), d);
    empty_as("to_dtype", x.to_dtype::<f16>(), d);
    let mut y = x.clone();
    y += x;
    y.unary_assign(typed_tensor::ops::Exp);
    same("+=, unary_assign", y);

    // Along each axis: scans, lane ops, sorting, flips and rolls.
    macro_rules! along {
        ($($ax:literal)*) => {$(
            same("cumsum", x.cumsum::<Axis<$ax>>());
            same("cumprod", x.cumprod::<Axis<$ax>>());
            same("logcumsumexp", x.logcumsumexp::<Axis<$ax>>());
            let (v, i) = x.cummax::<Axis<$ax>>();
            same("cummax", v);
            index("cummax indices", i);
            let (v, i) = x.cummin::<Axis<$ax>>();
            same("cummin", v);
            index("cummin indices", i);
            same("softmax", x.softmax::<Axis<$ax>>());
            same("log_softmax", x.log_softmax::<Axis<$ax>>());
            same("layer_norm", x.layer_norm::<Axis<$ax>>(1e-5));
            same("rms_norm", x.rms_norm::<Axis<$ax>>(1e-5));
            index("argsort", x.argsort::<Axis<$ax>>(false));
            same("sort", x.sort::<Axis<$ax>>(true).0);
            same("flip", x.flip::<Axis<$ax>>());
            same("roll", x.roll::<Axis<$ax>>(3));
        )*};
    }
    along!(0 1);

    // Reductions over the huge axis: the result is empty too.
    let huge = usize::from(d[1] > d[0]);
    let rest = [d[1 - huge]];
    if huge == 1 {
        empty_as("sum", x.sum::<Axis<1>>(), &rest);
        empty_as("max", x.max::<Axis<1>>(), &rest);
        empty_as("any", x.any::<Axis<1>>(), &rest);
        empty_as("all", x.all::<Axis<1>>(), &rest);
        empty_as("count_nonzero", x.count_nonzero::<Axis<1>>(), &rest);
        empty_as("logsumexp", x.logsumexp::<Axis<1>>(), &rest);
    } else {
        empty_as("sum", x.sum::<Axis<0>>(), &rest);
        empty_as("max", x.max::<Axis<0>>(), &rest);
        empty_as("any", x.any::<Axis<0>>(), &rest);
        empty_as("all", x.all::<Axis<0>>(), &rest);
        empty_as("count_nonzero", x.count_nonzero::<Axis<0>>(), &rest);
        empty_as("logsumexp", x.logsumexp::<Axis<0>>(), &rest);
    }
    // The ops that take a count along an axis: fine along the huge one, refused along the empty one.
    macro_rules! counted {
        ($long:literal, $empty:literal) => {{
            let (v, i) = x.try_topk::<Axis<$long>, 2>(true).unwrap();
            let mut two = [d[0], d[1]];
            two[$long] = 2;
            empty_as("topk", v, &two);
            empty_as("topk indices", i, &two);
            let (v, i) = x.try_median::<Axis<$long>>().unwrap();
            empty_as("median", v, &rest);
            empty_as("median indices", i, &rest);
            assert!(
                x.try_topk::<Axis<$empty>, 2>(true).is_err(),
                "topk along {:?}",
                d
            );
            assert!(
                x.try_median::<Axis<$empty>>().is_err(),
                "median along {:?}",
                d
            );
        }};
    }
    if huge == 1 {
        counted!(1, 0);
    } else {
        counted!(0, 1);
    }
    // Repeats: twice the huge axis is still empty, and costs nothing.
    let mut twice = [d[0], d[1]];
    twice[huge] *= 2;
    empty_as(
        "tile",
        x.try_tile_with_shape((twice[0], twice[1])).unwrap(),
        &twice,
    );
    let wide = if huge == 1 {
        x.try_repeat_interleave_with_shape::<Axis<1>, Runtime2>((twice[0], twice[1]))
    } else {
        x.try_repeat_interleave_with_shape::<Axis<0>, Runtime2>((twice[0], twice[1]))
    };
    empty_as("repeat_interleave", wide.unwrap(), &twice);
    assert_eq!(x.any_all().to_scalar(), 0);
    assert_eq!(x.all_all().to_scalar(), 1);
    assert_eq!(x.sum_all().to_scalar(), 0.0);

    // Traced: the forward ops and their gradients.
    let t = Traced::constant(x.clone());
    let loss = (t.exp().cumsum::<Axis<0>>().softmax::<Axis<1>>() * 2.0).sum_all();
    assert_eq!(loss.value().to_scalar(), 0.0);
    drop(loss.backward());
}

/// The sweep itself, run by [`empty_but_huge_shapes_cost_nothing`] in a child process with little memory.
fn empty_sweep() {
    for shape in [(0, 1 << 40), (1 << 40, 0), (0, 1 << 26)] {
        sweep_one(&Tensor::<f32, Runtime2, Cpu>::zeros_with_shape(shape));
    }
    // `any` and `all` hold a byte per element: they summed an `i64` mask, 256 MiB for these 32 MiB.
    let bytes = Tensor::<u8, Runtime2, Cpu>::full_with_shape((1 << 23, 4), 1);
    assert_eq!(bytes.any::<Axis<1>>().sum_all().to_scalar(), 0); // 2^23 ones wrap to 0 in u8
    assert_eq!(
        bytes
            .all::<Axis<1>>()
            .to_dtype::<u32>()
            .sum_all()
            .to_scalar(),
        1 << 23
    );
}

/// Scans on `(0, 2^26)` took 1.2 s and 512 MB, and on `(0, 2^40)` aborted the process: they collected one start
/// per lane before looking at the lanes' length. Every shape-preserving op now returns at once on such shapes,
/// in a process that may not map more than 256 MiB.
#[test]
fn empty_but_huge_shapes_cost_nothing() {
    const CHILD: &str = "TYPED_TENSOR_EMPTY_SWEEP";
    if std::env::var_os(CHILD).is_some() {
        empty_sweep();
        return;
    }
    in_limited_child(
        "edges::empty_but_huge_shapes_cost_nothing",
        CHILD,
        1 << 18,
        Duration::from_secs(120),
    );
}

/// Runs `f` and returns its error: a test failure if it panics (naming `what` and the message) or succeeds.
fn refused<R>(what: &str, f: impl FnOnce() -> typed_tensor::Result<R>) -> Error {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(_)) => panic!("{what}: returned Ok"),
        Ok(Err(e)) => e,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("{what}: panicked instead of returning its error: {msg:?}")
        }
    }
}

/// Asserts `e` is `Error::ShapeOverflow` naming `op`.
fn overflow(e: Error, op: &str) {
    assert!(
        matches!(e, Error::ShapeOverflow { op: o, .. } if o == op),
        "{op}: {e:?}"
    );
}

/// Every public `try_` form (and every other method returning `Result` for runtime data) given an output too
/// large to address, an empty runtime-sized axis, or sizes that do not fit: each returns its error, none panics.
/// `try_tile_with_shape` panicked with "capacity overflow" and `try_one_hot` through an unwrap inside it; `topk`
/// and `median` had no `try_` form.
#[test]
fn every_try_form_returns_its_error() {
    type R1 = (usize,);
    type R2 = (usize, usize);
    let one = Tensor::<f32, R2, Cpu>::full_with_shape((1, 1), 1.0);
    let tall = one.broadcast_with_shape((1 << 62, 1)); // a view: no memory
    let row = Tensor::<f32, R1, Cpu>::full_with_shape((1,), 1.0).broadcast_with_shape((1 << 62,));
    let empty = Tensor::<f32, R2, Cpu>::zeros_with_shape((2, 0));
    let small = Tensor::<f32, R2, Cpu>::zeros_with_shape((2, 3));
    let other = Tensor::<f32, R2, Cpu>::zeros_with_shape((3, 3));
    let huge = (1usize << 62, 4usize);

    // Views copied dense, and the custom-op door (which copies strided inputs first).
    for e in [
        refused("try_contiguous", || tall.try_contiguous()),
        refused("try_custom_op", || {
            tall.try_custom_op(crate::custom::Identity)
        }),
        refused("try_custom_op2", || {
            tall.try_custom_op2(&tall, crate::custom::Identity)
        }),
    ] {
        assert!(
            matches!(e, Error::ShapeOverflow { .. } | Error::OutOfMemory { .. }),
            "{e:?}"
        );
    }
    // The traced forms copy their inputs the same way.
    let traced = typed_tensor::autograd::Traced::constant(tall.clone());
    for e in [
        refused("Traced::try_custom_op", || {
            traced.try_custom_op(crate::custom::Identity)
        }),
        refused("Traced::try_custom_op2", || {
            traced.try_custom_op2(&traced, crate::custom::Identity)
        }),
    ] {
        assert!(
            matches!(e, Error::ShapeOverflow { .. } | Error::OutOfMemory { .. }),
            "{e:?}"
        );
    }

    // An op whose output dims are too large to allocate: its `try_` forms return the overflow, naming the op.
    overflow(
        refused("try_custom_op_to", || {
            small.try_custom_op_to::<R2, _>(crate::custom::Huge)
        }),
        "huge",
    );
    overflow(
        refused("try_custom_op2_to", || {
            small.try_custom_op2_to::<_, R2, _>(&small, crate::custom::Huge)
        }),
        "huge",
    );

    // The infallible forms panic with the same error, not the allocator's "capacity overflow".
    let message = crate::common::panic_message(|| tall.exp());
    assert!(
        message.contains("exp: shape [4611686018427387904, 1] is too large"),
        "{message}"
    );

    // Constructors and views.
    overflow(
        refused("try_full_with_shape", || {
            Tensor::<f32, R2, Cpu>::try_full_with_shape(huge, 0.0)
        }),
        "full",
    );
    refused("from_slice_with_shape", || {
        Tensor::<f32, R2, Cpu>::from_slice_with_shape(huge, &[])
    });
    refused("from_vec_with_shape", || {
        Tensor::<f32, R2, Cpu>::from_vec_with_shape(huge, vec![])
    });
    overflow(
        refused("try_broadcast_with_shape", || {
            one.try_broadcast_with_shape(huge)
        }),
        "broadcast",
    );
    refused("try_reshape_with_shape", || {
        small.try_reshape_with_shape((1usize << 62, 4usize))
    });
    refused("try_reshape", || small.try_reshape::<Rank2<3, 3>>());
    refused("try_narrow", || small.try_narrow::<Axis<1>, 2, 2>());
    refused("try_squeeze", || small.try_squeeze::<Axis<0>>());
    refused("try_i", || small.try_i(5));

    // Elementwise, in place, matmul.
    refused("try_binary", || {
        small.try_binary(typed_tensor::ops::Add, &other)
    });
    refused("try_binary_assign", || {
        small
            .clone()
            .try_binary_assign(typed_tensor::ops::Add, &other)
    });
    refused("try_binary_into", || {
        small.try_binary_into(typed_tensor::ops::Add, &other, &mut small.clone())
    });
    refused("try_copy_from", || small.clone().try_copy_from(&other));
    overflow(
        refused("try_matmul", || {
            tall.try_matmul(&one.broadcast_with_shape((1, 4)))
        }),
        "matmul",
    );

    // Joins and repeats whose output is too large.
    overflow(
        refused("try_cat", || row.try_cat::<Axis<0>, 4, _>(&row)),
        "cat",
    );
    overflow(
        refused("try_stack", || {
            Tensor::try_stack::<Axis<0>, 8>(&core::array::from_fn(|_| tall.clone()))
        }),
        "stack",
    );
    overflow(
        refused("try_pad", || tall.try_pad::<Axis<1>, 3, 4, 8>()),
        "pad",
    );
    refused("try_pad_mode", || {
        empty.try_pad_mode::<Axis<1>, 1, 1, 2>(typed_tensor::ops::PadMode::Reflect)
    });
    refused("try_split", || small.try_split::<Axis<1>, 2, 2>());
    overflow(
        refused("try_tile_with_shape", || {
            one.try_tile_with_shape((1usize << 31, 1usize << 30))
        }),
        "tile",
    );
    overflow(
        refused("try_repeat_interleave_with_shape", || {
            small.try_repeat_interleave_with_shape::<Axis<1>, R2>((2, 3 << 61))
        }),
        "repeat_interleave",
    );

    // Indexing.
    let ids = Tensor::<u32, R1, Cpu>::full_with_shape((1,), 0).broadcast_with_shape((1 << 62,));
    let table = Tensor::<f32, Rank2<2, 4>, Cpu>::zeros();
    overflow(
        refused("try_embedding", || table.try_embedding(&ids)),
        "embedding",
    );
    overflow(
        refused("try_index_select", || {
            table.try_index_select::<Axis<1>, _, _>(&ids)
        }),
        "index_select",
    );
    let bad = Tensor::<i64, R2, Cpu>::full_with_shape((2, 3), 7);
    refused("try_gather", || small.try_gather::<Axis<1>, _, _>(&bad));
    refused("try_scatter_add", || {
        small.try_scatter_add::<Axis<1>, _, _>(&bad, &small)
    });
    let labels = Tensor::<u32, R2, Cpu>::zeros_with_shape((0, 1 << 61));
    overflow(
        refused("try_one_hot", || labels.try_one_hot::<4, f32>()),
        "one_hot",
    );
    let labels = Tensor::<u32, R1, Cpu>::full_with_shape((2,), 9);
    refused("try_one_hot", || labels.try_one_hot::<4, f32>());

    // Reductions, sorting and selection over an empty runtime-sized axis.
    let empty_axis = |e: Error, op: &str| {
        assert!(
            matches!(e, Error::EmptyAxis { op: o, axis: 1 } if o == op),
            "{op}: {e:?}"
        )
    };
    empty_axis(refused("try_max", || empty.try_max::<Axis<1>>()), "max");
    empty_axis(
        refused("try_min_keepdim", || empty.try_min_keepdim::<Axis<1>>()),
        "min",
    );
    empty_axis(
        refused("try_argmax", || empty.try_argmax::<Axis<1>>()),
        "argmax",
    );
    empty_axis(
        refused("try_argmin_keepdim", || {
            empty.try_argmin_keepdim::<Axis<1>>()
        }),
        "argmin",
    );
    refused("try_max_all", || empty.try_max_all());
    refused("try_argmin_all", || empty.try_argmin_all());
    empty_axis(
        refused("try_median", || empty.try_median::<Axis<1>>()),
        "median",
    );
    let short = refused("try_topk", || small.try_topk::<Axis<1>, 5>(true));
    assert_eq!(
        short.to_string(),
        "topk: takes 5 elements along axis 1, which has 3"
    );
    refused("kthvalue", || small.kthvalue::<Axis<1>>(4));

    // Traced values, parameters, optimizers.
    let t = Traced::constant(small.clone());
    let t1 = Traced::constant(one.clone());
    refused("Traced::try_topk", || t.try_topk::<Axis<1>, 4>(false));
    empty_axis(
        refused("Traced::try_median", || {
            Traced::constant(empty.clone()).try_median::<Axis<1>>()
        }),
        "median",
    );
    overflow(
        refused("Traced::try_tile_with_shape", || {
            t1.try_tile_with_shape((1usize << 31, 1usize << 30))
        }),
        "tile",
    );
    refused("Traced::try_repeat_interleave_with_shape", || {
        t.try_repeat_interleave_with_shape::<Axis<0>, R2>((3, 3))
    });
    let w = typed_tensor::autograd::Var::new(small.clone());
    refused("Var::try_set", || w.try_set(other.clone()));
    refused("Var::try_update", || w.try_update(|v| *v = other.clone()));

    // Shape arithmetic.
    let dims = typed_tensor::shape::Dims::from_slice(&[1 << 62, 4]);
    overflow(
        refused("Dims::try_numel", || dims.try_numel("numel")),
        "numel",
    );
    overflow(
        refused("Dims::try_bytes", || dims.try_bytes("bytes", 4)),
        "bytes",
    );
}
