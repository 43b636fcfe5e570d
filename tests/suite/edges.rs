//! Correctness at the edges (issue 42): zero-element tensors whose other dims are huge, which must cost nothing.
//! Each case failed (ran out of memory, aborted the process, or ran for minutes) before the fix it names.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use typed_tensor::autograd::Traced;
use typed_tensor::prelude::*;

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
