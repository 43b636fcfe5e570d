//! The CUDA device's own services, on a GPU (skipped without one): the caching allocator's books and reuse, and
//! its refusals (sizes too large to address, allocations larger than the GPU, reads past a buffer); the
//! process-wide TF32 switch of the f32 products; CUDA graphs (capture, replay, what they refuse and keep); the
//! mistakes a custom op's PTX can make.
//! One test in its own binary, so no other test allocates while it reads the global statistics, no other
//! product runs while TF32 is on, and no other thread's work is recorded into a graph.
#![cfg(feature = "cuda")]

use typed_tensor::device::Cuda;
use typed_tensor::prelude::*;

#[test]
fn device_services() {
    if let Err(e) = Cuda::init() {
        eprintln!("skipped the CUDA device services test: {e}");
        return;
    }
    caching_allocator_reuses_freed_buffers_and_reports_bytes();
    tf32_products_stay_within_their_stated_error();
    graphs::replay_elementwise_and_matmul_on_new_inputs();
    graphs::a_replayed_training_step_matches_eager_training();
    graphs::replay_reports_bad_indices_and_stale_inputs();
    graphs::captures_refuse_host_work_and_leave_the_device_usable();
    user_ptx_mistakes_are_errors();
    let end = Cuda::memory_stats().unwrap();
    assert_eq!(
        end.in_graphs, 0,
        "every graph is gone, and its buffers with it"
    );
}

/// A custom op's PTX (`PtxKernel`) that does not load, lacks its entry or reuses another module's name gives an
/// error naming it; an empty launch runs nothing.
fn user_ptx_mistakes_are_errors() {
    use typed_tensor::device::cuda::PtxKernel;
    const EMPTY: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";
    let missing = PtxKernel::new("user_empty", EMPTY, "nothing_here");
    // SAFETY: nothing is launched: the entry does not exist (or the grid is empty).
    let e = unsafe { missing.launch("user_op", (1, 1, 1), (32, 1, 1), 0, &[]) }.unwrap_err();
    assert!(e.to_string().contains("has no entry `nothing_here`"), "{e}");
    assert!(unsafe { missing.launch("user_op", (0, 1, 1), (32, 1, 1), 0, &[]) }.is_ok());
    let renamed = PtxKernel::new("user_empty", "\n// another text\n", "nothing_here");
    let e = unsafe { renamed.launch("user_op", (1, 1, 1), (32, 1, 1), 0, &[]) }.unwrap_err();
    assert!(e.to_string().contains("two different PTX texts"), "{e}");
    let nul = PtxKernel::new("user_nul", "\0", "f");
    let e = unsafe { nul.launch("user_op", (1, 1, 1), (32, 1, 1), 0, &[]) }.unwrap_err();
    assert!(e.to_string().contains("NUL byte"), "{e}");
    let broken = PtxKernel::new("user_broken", "not ptx", "f");
    let e = unsafe { broken.launch("user_op", (1, 1, 1), (32, 1, 1), 0, &[]) }.unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot load the PTX module `user_broken`"),
        "{e}"
    );
}

fn caching_allocator_reuses_freed_buffers_and_reports_bytes() {
    Cuda::empty_cache().unwrap();
    let start = Cuda::memory_stats().unwrap();
    assert_eq!(start.cached, 0);

    // 1M f32 = 4 MiB: a 1 MiB size class multiple, so the books count exactly 4 MiB.
    let a = Tensor::<f32, Rank1<{ 1 << 20 }>, Cuda>::ones();
    let held = Cuda::memory_stats().unwrap();
    assert_eq!(held.in_use - start.in_use, 4 << 20);
    drop(a);
    let freed = Cuda::memory_stats().unwrap();
    assert_eq!(freed.in_use, start.in_use);
    assert_eq!(freed.cached, 4 << 20);

    // The same size again comes from the cache, and computes correctly in the reused buffer.
    let b = Tensor::<f32, Rank1<{ 1 << 20 }>, Cuda>::full(3.0);
    let reused = Cuda::memory_stats().unwrap();
    assert_eq!(reused.cached, 0);
    assert_eq!(reused.in_use - start.in_use, 4 << 20);
    assert_eq!(b.sum_all().to_scalar(), 3.0 * (1 << 20) as f32);

    // A small tensor rounds up to the 512-byte class; empty_cache gives the cached bytes back.
    let small = Tensor::<u8, Rank1<3>, Cuda>::zeros();
    assert_eq!(
        Cuda::memory_stats().unwrap().in_use - reused.in_use,
        512,
        "3 bytes take one 512-byte class"
    );
    drop((b, small));
    Cuda::empty_cache().unwrap();
    let end = Cuda::memory_stats().unwrap();
    assert_eq!((end.in_use, end.cached), (start.in_use, 0));

    // Sizes too large to address, and allocations larger than the GPU, are errors that leave the books alone.
    assert!(matches!(
        Tensor::<f64, (usize,), Cuda>::try_full_with_shape((1 << 61,), 0.0),
        Err(Error::ShapeOverflow { op: "full", .. })
    ));
    let err = Tensor::<u8, (usize,), Cuda>::try_full_with_shape((1 << 50,), 0).unwrap_err();
    assert!(matches!(err, Error::Cuda { op: "full", .. }), "{err}");
    // A read through a hand-built layout past the buffer's end is refused before the copy.
    use typed_tensor::device::Kernels;
    use typed_tensor::layout::Layout;
    use typed_tensor::shape::Dims;
    let t = Tensor::<f32, Rank1<4>, Cuda>::ones();
    let past = Layout::from_parts(Dims::from_slice(&[4]), &[1], 2);
    let err = <Cuda as Kernels>::to_vec(t.storage(), &past).unwrap_err();
    assert!(
        err.to_string().contains("past the end of a buffer of 4"),
        "{err}"
    );
    drop(t);
    let after = Cuda::memory_stats().unwrap();
    assert_eq!(after.in_use, start.in_use);
}

/// Deterministic values in [-1, 1) (xorshift).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            ((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// With TF32 allowed, an f32 product of `K` terms in [-1, 1) is within `4 * 2^-11 * sqrt(K)` of the exact one
/// (`Cuda::set_allow_tf32`'s stated precision); switched off again, products are exact f32 again.
fn tf32_products_stay_within_their_stated_error() {
    const K: usize = 512;
    let (va, vb) = (values(1, 64 * K), values(2, K * 48));
    let a = Tensor::<f32, Rank2<64, K>, Cuda>::from_vec(va.clone()).unwrap();
    let b = Tensor::<f32, Rank2<K, 48>, Cuda>::from_vec(vb.clone()).unwrap();
    let want: Vec<f64> = (0..64 * 48)
        .map(|ij| {
            let (i, j) = (ij / 48, ij % 48);
            (0..K)
                .map(|k| va[i * K + k] as f64 * vb[k * 48 + j] as f64)
                .sum()
        })
        .collect();
    let worst = |got: Vec<f32>| {
        got.iter()
            .zip(&want)
            .map(|(g, w)| (*g as f64 - w).abs())
            .fold(0.0, f64::max)
    };
    assert!(!Cuda::allow_tf32(), "TF32 is off by default");
    let exact = worst(a.matmul(&b).to_vec());
    Cuda::set_allow_tf32(true);
    let tf32 = worst(a.matmul(&b).to_vec());
    Cuda::set_allow_tf32(false);
    let again = worst(a.matmul(&b).to_vec());
    println!("largest error of a {K}-term f32 product: {exact:e} exact, {tf32:e} with TF32");
    assert!(exact < 1e-4 && again < 1e-4, "{exact} {again}");
    let bound = 4.0 * 2f64.powi(-11) * (K as f64).sqrt();
    assert!(tf32 < bound, "TF32 error {tf32} over {bound}");
}

mod graphs {
    use super::values;
    use typed_tensor::autograd::{Traced, Var};
    use typed_tensor::device::{Cuda, CudaGraph};
    use typed_tensor::nn::{BatchNorm1d, Linear, Module, ReLU};
    use typed_tensor::optim::{Adam, AdamConfig, Optimizer};
    use typed_tensor::prelude::*;

    fn close(got: &[f32], want: &[f32], tol: f32, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= tol * (1.0 + w.abs()),
                "{what}[{i}]: {g} vs {w}"
            );
        }
    }

    /// A graph of a product, a bias, an activation and a reduction replays on each new input written into the
    /// captured one (through a transposed view too), giving what the eager ops give; its intermediate results
    /// stay with it until it is dropped.
    pub fn replay_elementwise_and_matmul_on_new_inputs() {
        let before = Cuda::memory_stats().unwrap();
        let mut x = Tensor::<f32, Rank2<8, 16>, Cuda>::zeros();
        let w = Tensor::<f32, Rank2<16, 4>, Cuda>::from_vec(values(1, 64)).unwrap();
        let b = Tensor::<f32, Rank1<4>, Cuda>::from_vec(values(2, 4)).unwrap();
        let f = |x: &Tensor<f32, Rank2<8, 16>, Cuda>| {
            let h = (x.matmul(&w) + &b).relu();
            (h.sum::<Axis<1>>(), h.exp())
        };
        f(&x); // warm-up: first-use work (kernel loading, cuBLAS) happens outside the graph
        let (graph, (sums, exps)) = Cuda::capture(|| f(&x)).unwrap();
        assert!(graph.len() >= 4, "{graph:?}");
        assert!(
            Cuda::memory_stats().unwrap().in_graphs > 0,
            "the product and the bias sum were dropped inside the capture; the graph keeps their buffers"
        );
        for step in 0..3u64 {
            let input =
                Tensor::<f32, Rank2<16, 8>, Cuda>::from_vec(values(10 + step, 128)).unwrap();
            x.copy_from(&input.t()); // a strided source, written into the captured buffer
            graph.replay().unwrap();
            let (want_sums, want_exps) = f(&x);
            close(&sums.to_vec(), &want_sums.to_vec(), 1e-5, "sums");
            close(&exps.to_vec(), &want_exps.to_vec(), 1e-5, "exps");
        }
        drop(graph);
        let after = Cuda::memory_stats().unwrap();
        assert_eq!(
            after.in_graphs, before.in_graphs,
            "dropping the graph releases its buffers"
        );

        // Products large enough for cuBLAS (2^21 multiply-adds), forward and through its transposed operands in a
        // backward pass, recorded and replayed.
        let mut a = Tensor::<f32, Rank2<128, 128>, Cuda>::zeros();
        let bm =
            Var::new(Tensor::<f32, Rank2<128, 128>, Cuda>::from_vec(values(3, 1 << 14)).unwrap());
        let run = |a: &Tensor<f32, Rank2<128, 128>, Cuda>| {
            let y = Traced::constant(a.clone()).matmul(&bm.trace());
            let loss = (y.clone() * y).mean_all();
            loss.backward().get(&bm)
        };
        run(&a);
        let (graph, grad) = Cuda::capture(|| run(&a)).unwrap();
        for step in 0..2u64 {
            a.copy_from(&Tensor::from_vec(values(20 + step, 1 << 14)).unwrap());
            graph.replay().unwrap();
            close(
                &grad.to_vec(),
                &run(&a).to_vec(),
                1e-4,
                "cuBLAS products in a graph",
            );
        }
    }

    // Batch norm first: its running statistics are of the inputs, so eager and replayed training must agree on
    // them to rounding. (After a linear layer they would not: batch norm makes the gradient of that layer's bias
    // zero up to rounding, and Adam turns rounding-sized gradients into steps of ~lr / 10, whose signs depend on
    // the order of the sums, so the biases and the running means of the two models drift apart.)
    type Mlp = (
        BatchNorm1d<f32, 16, Cuda>,
        Linear<f32, 16, 32, Cuda>,
        ReLU,
        Linear<f32, 32, 5, Cuda>,
    );

    fn mlp() -> Mlp {
        (BatchNorm1d::new(), Linear::new(3), ReLU, Linear::new(4))
    }

    fn batch(step: u64) -> (Vec<f32>, Vec<u32>) {
        let labels = (0..8)
            .map(|i| ((i as u64 * 7 + step * 3) % 5) as u32)
            .collect();
        (values(100 + step, 8 * 16), labels)
    }

    /// Forward and backward of an MLP with batch norm and cross entropy (a gather, and a scatter_add in its
    /// gradient) recorded once and replayed on new batches, Adam stepping after each replay: the losses, the
    /// parameters and the running statistics (updated in place, so each replay moves them) follow eager training
    /// of an identical model step for step.
    pub fn a_replayed_training_step_matches_eager_training() {
        let (eager, graphed) = (mlp(), mlp());
        let mut opt_e = Adam::new(&eager, AdamConfig::default());
        let mut opt_g = Adam::new(&graphed, AdamConfig::default());
        let mut x = Tensor::<f32, Rank2<8, 16>, Cuda>::zeros();
        let mut y = Tensor::<u32, Rank1<8>, Cuda>::zeros();
        let step = |model: &Mlp,
                    x: &Tensor<f32, Rank2<8, 16>, Cuda>,
                    y: &Tensor<u32, Rank1<8>, Cuda>| {
            let logits: Traced<f32, Rank2<8, 5>, Cuda> = model.forward(Traced::constant(x.clone()));
            let loss = logits.cross_entropy(y).mean_all();
            let value = loss.value().clone();
            (value, loss.backward())
        };
        let mut graph: Option<(CudaGraph, _)> = None;
        for k in 0..6u64 {
            let (pixels, labels) = batch(k);
            let xe = Tensor::<f32, Rank2<8, 16>, Cuda>::from_vec(pixels).unwrap();
            let ye = Tensor::<u32, Rank1<8>, Cuda>::from_vec(labels).unwrap();
            let (loss_e, grads_e) = step(&eager, &xe, &ye);
            opt_e.step(&grads_e);
            x.copy_from(&xe);
            y.copy_from(&ye);
            let loss_g = if k == 0 {
                // The first step runs eagerly: Adam makes its moments there, outside the graph.
                let (loss, grads) = step(&graphed, &x, &y);
                opt_g.step(&grads);
                loss
            } else {
                let (g, (loss, grads)) =
                    graph.get_or_insert_with(|| Cuda::capture(|| step(&graphed, &x, &y)).unwrap());
                g.replay().unwrap();
                opt_g.step(grads);
                loss.clone()
            };
            close(
                &loss_g.to_vec(),
                &loss_e.to_vec(),
                1e-5,
                &format!("loss at step {k}"),
            );
        }
        let mut params = (Vec::new(), Vec::new());
        let (a, b) = (&eager, &graphed);
        params.0.extend(a.1.weight.value().to_vec());
        params.1.extend(b.1.weight.value().to_vec());
        params.0.extend(a.3.weight.value().to_vec());
        params.1.extend(b.3.weight.value().to_vec());
        close(&params.1, &params.0, 1e-4, "weights after 6 steps");
        let (ra, rb) = (a.0.running.as_ref().unwrap(), b.0.running.as_ref().unwrap());
        close(
            &rb.mean.value().to_vec(),
            &ra.mean.value().to_vec(),
            1e-5,
            "running mean",
        );
        close(
            &rb.var.value().to_vec(),
            &ra.var.value().to_vec(),
            1e-5,
            "running var",
        );
        assert_eq!(rb.num_batches_tracked.value().to_scalar(), 6);
        let (g, _) = graph.unwrap();
        assert!(g.len() >= 20, "forward and backward in one graph: {g:?}");
    }

    /// An out-of-range index written after the capture is reported as the eager gather reports it, by `wait` or
    /// by the first replay that looks after the GPU has run the one that met it (replays do not wait), with the
    /// index the bad replay read even when the tensor was rewritten since; the replays after a report run
    /// cleanly. A captured input replaced by a new tensor (not written in place) makes replay refuse instead of
    /// reading the old buffer.
    pub fn replay_reports_bad_indices_and_stale_inputs() {
        let x = Tensor::<f32, Rank2<4, 3>, Cuda>::from_vec(values(7, 12)).unwrap();
        let mut idx = Tensor::<u32, Rank2<4, 1>, Cuda>::zeros();
        let mut idx64 = Tensor::<i64, Rank1<2>, Cuda>::zeros();
        let (graph, (picked, _rows)) = Cuda::capture(|| {
            (
                x.gather::<Axis<1>, u32, _>(&idx),
                x.index_select::<Axis<0>, i64, _>(&idx64),
            )
        })
        .unwrap();
        let expect_bad = |r: Result<()>, want: (&str, i128, usize)| match r {
            Err(Error::IndexOutOfRange {
                op, index, size, ..
            }) => assert_eq!((op, index, size), want),
            other => panic!("expected an out-of-range index {want:?}, got {other:?}"),
        };
        // Reported by `wait`, or by the replay itself when the GPU ran it before the replay looked.
        idx.copy_from(&Tensor::from_array([[0], [2], [3], [1]]));
        expect_bad(graph.replay().and_then(|()| graph.wait()), ("gather", 3, 3));
        graph.wait().unwrap(); // reported once

        // With the index value the bad replay read, though the indices were rewritten before the report.
        idx.copy_from(&Tensor::from_array([[0], [2], [1], [7]]));
        let met = graph.replay();
        idx.copy_from(&Tensor::from_array([[0], [2], [1], [1]]));
        expect_bad(met.and_then(|()| graph.wait()), ("gather", 7, 3));

        // Met by one replay, reported by the next (the GPU has run the first one by then).
        idx.copy_from(&Tensor::from_array([[9], [2], [1], [1]]));
        let met = graph.replay();
        idx.copy_from(&Tensor::from_array([[0], [2], [1], [1]]));
        Cuda::synchronize().unwrap();
        expect_bad(met.and_then(|()| graph.replay()), ("gather", 9, 3));
        graph.replay().unwrap();
        graph.wait().unwrap();
        let xs = x.to_vec();
        assert_eq!(picked.to_vec(), [xs[0], xs[5], xs[7], xs[10]]);

        // An i64 index beyond the i32 range, the first bad one of two.
        idx64.copy_from(&Tensor::from_array([-(1 << 40), 9]));
        expect_bad(
            graph.replay().and_then(|()| graph.wait()),
            ("index_select", -(1 << 40), 4),
        );
        idx64.copy_from(&Tensor::from_array([3, 0]));
        graph.replay().unwrap();
        graph.wait().unwrap();

        drop(x); // as if replaced by a new tensor: the captured buffer is dropped
        let err = graph.replay().unwrap_err();
        assert!(err.to_string().contains("replaced"), "{err}");
    }

    /// Reads, host copies, waits and optimizer steps inside a capture fail it, naming the op; so does a panic,
    /// and the device keeps working after each. Captures do not nest, and another thread's launches fail while
    /// one runs instead of being recorded.
    pub fn captures_refuse_host_work_and_leave_the_device_usable() {
        let x = Tensor::<f32, Rank1<4>, Cuda>::from_array([1., 2., 3., 4.]);
        let works = || assert_eq!((&x * 2.0).to_vec(), [2., 4., 6., 8.]);
        let err = Cuda::capture(|| (&x + 1.0).try_to_vec()).unwrap_err();
        assert!(
            err.to_string().contains("to_vec") && err.to_string().contains("cannot be recorded"),
            "{err}"
        );
        works();
        let err =
            Cuda::capture(|| Tensor::<f32, Rank1<2>, Cuda>::from_vec(vec![1., 2.])).unwrap_err();
        assert!(err.to_string().contains("from_slice"), "{err}");
        works();
        let err = Cuda::capture(Cuda::synchronize).unwrap_err();
        assert!(err.to_string().contains("synchronize"), "{err}");
        works();
        let w = Var::new(Tensor::<f32, Rank1<4>, Cuda>::ones());
        let mut opt = Adam::new(&w, AdamConfig::default());
        let grads = (w.trace() * &x).sum_all().backward();
        opt.step(&grads);
        let err = Cuda::capture(|| opt.try_step(&grads)).unwrap_err();
        assert!(err.to_string().contains("Adam::step"), "{err}");
        works();
        let nested = Cuda::capture(|| Cuda::capture(|| ()).map(|_| ()));
        assert!(nested.unwrap().1.is_err(), "one capture at a time");
        let (graph, other_thread) = Cuda::capture(|| {
            std::thread::scope(|s| {
                s.spawn(|| Tensor::<f32, (usize,), Cuda>::try_full_with_shape((4,), 1.0).map(drop))
                    .join()
                    .unwrap()
            })
        })
        .unwrap();
        let err = other_thread.unwrap_err();
        assert!(
            err.to_string().contains("another thread is capturing"),
            "{err}"
        );
        assert!(
            graph.is_empty(),
            "nothing from the other thread was recorded"
        );
        drop(graph);
        let panicked =
            std::panic::catch_unwind(|| Cuda::capture(|| -> () { panic!("inside a capture") }));
        assert!(panicked.is_err());
        works();
        let (empty, ()) = Cuda::capture(|| ()).unwrap();
        assert!(empty.is_empty());
        empty.replay().unwrap();
    }
}
