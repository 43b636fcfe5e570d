//! The fused attention path's memory at L = S = 4096 (issue 45): forward and backward of one head of 64 features
//! allocate a few MB beyond their inputs, where one `(L, S)` score matrix alone is 64 MiB (the composed path's,
//! measured here too). Its own binary: it counts every allocation of the process with a global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use typed_tensor::autograd::Var;
use typed_tensor::nn::Sdpa;
use typed_tensor::prelude::*;

/// Counts the bytes live and the most live since the last [`reset`].
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most bytes live while `f` ran, beyond those live before it.
fn peak_of<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let r = f();
    (PEAK.load(Ordering::Relaxed) - before, r)
}

const L: usize = 4096;
const MIB: usize = 1 << 20;

#[test]
fn fused_attention_memory_grows_with_l_times_e() {
    Cpu::set_cache_limit(0); // freed buffers go back to the allocator, so the count sees them go
    let q = Var::new(Tensor::<f32, Rank4<1, 1, L, 64>, Cpu>::randn(1));
    let k = Var::new(Tensor::<f32, Rank4<1, 1, L, 64>, Cpu>::randn(2));
    let v = Var::new(Tensor::<f32, Rank4<1, 1, L, 64>, Cpu>::randn(3));
    let scores = L * L * 4; // one (L, S) matrix of f32: 64 MiB
    let (fused, grads) = peak_of(|| {
        let y =
            q.trace()
                .scaled_dot_product_attention(&k.trace(), &v.trace(), Sdpa::new().causal());
        y.sum_all().backward()
    });
    assert!(grads.get(&k).to_vec().iter().all(|g| g.is_finite()));
    eprintln!(
        "fused forward + backward: {:.1} MiB beyond the inputs",
        fused as f64 / MIB as f64
    );
    // The output and the three gradients are 1 MiB each, the traced values' gradients as many again; a tile of
    // the scores is 64 KiB per thread.
    assert!(
        fused < 24 * MIB,
        "fused: {fused} bytes, against {scores} for one score matrix"
    );
    let (composed, _) = peak_of(|| {
        q.value().scaled_dot_product_attention(
            &k.value(),
            &v.value(),
            Sdpa::new().causal().composed(),
        )
    });
    eprintln!(
        "composed forward alone: {:.1} MiB",
        composed as f64 / MIB as f64
    );
    assert!(
        composed >= scores,
        "the composed path holds the scores: {composed} bytes"
    );
}
