//! CUDA graphs: the GPU work of a closure recorded once ([`Cuda::capture`]) and replayed with one launch
//! ([`CudaGraph::replay`]), so that a small model's step costs one launch of host time instead of one per kernel.
//!
//! A replay runs the recorded kernels on the buffers they ran on at capture, so those buffers must stay where
//! they are while the graph lives. The allocator sees to that: every buffer a kernel addressed during the capture
//! (through `CudaStorage::ptr_at`) is *pinned* by the graph, and a pinned buffer whose tensor is dropped is kept
//! out of the cache until the last graph pinning it is dropped. A buffer that existed before the capture (a
//! parameter, an input) and is dropped while the graph lives means its tensor moved to another buffer (it was
//! replaced, not updated in place), so the graph would read stale data: replay then refuses with an error.
//!
//! What cannot be recorded is refused by name during the capture, and the capture then fails: reads back to the
//! host, host-to-device copies, synchronisation, and the optimizers' steps (their coefficients change every
//! step). Out-of-range indices of the gather/scatter kernels are reported by a later [`CudaGraph::replay`] (each
//! replay ends by copying the kernels' records into page-locked host memory, which the next replays read without
//! waiting) or by [`CudaGraph::wait`].

use super::{check, cuda_err, lock, state, Cache, Cuda, CudaStorage, DeviceBytes};
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use cust::sys as cu;
use std::collections::{BTreeMap, BTreeSet};

mod index_checks;
pub(crate) use index_checks::{capture_record, defer_index_check, IndexCheck};
use index_checks::{copy_records_out, reset_records, Mailbox};

/// True while a capture runs: the hot paths (`ptr_at`, `alloc`, `drop`) look at the books only then.
static CAPTURING: AtomicBool = AtomicBool::new(false);

/// Whether a capture is running (on any thread: the device has one stream).
pub(crate) fn capturing() -> bool {
    CAPTURING.load(Ordering::Relaxed)
}

/// What a running capture has seen so far.
pub(super) struct Recording {
    /// The capturing thread: launches from others are refused meanwhile.
    thread: std::thread::ThreadId,
    /// Base address and size of every buffer a kernel addressed.
    touched: BTreeMap<cu::CUdeviceptr, usize>,
    /// Buffers allocated during the capture (the others existed before it).
    allocated: BTreeSet<cu::CUdeviceptr>,
    /// Touched buffers whose tensors were dropped during the capture: held for the graph, not cached.
    freed: BTreeSet<cu::CUdeviceptr>,
    /// The first op refused during the capture, and why.
    refused: Option<(&'static str, String)>,
    /// Index checks deferred to each replay.
    checks: Vec<IndexCheck>,
    /// Device address of the capture's record words (`Mailbox::CAPACITY` of them), and how many are handed out.
    records: cu::CUdeviceptr,
    records_used: usize,
}

impl Recording {
    fn new(records: cu::CUdeviceptr) -> Self {
        Recording {
            thread: std::thread::current().id(),
            touched: Default::default(),
            allocated: Default::default(),
            freed: Default::default(),
            refused: None,
            checks: Vec::new(),
            records,
            records_used: 0,
        }
    }

    fn on_capturing_thread(&self) -> bool {
        self.thread == std::thread::current().id()
    }
}

/// A buffer some live graph addresses.
pub(super) struct Pin {
    graphs: usize,
    size: usize,
    /// Its tensor was dropped: it returns to the cache when the last graph goes.
    freed: bool,
}

impl Cache {
    /// During a capture, `bytes` is addressed by a kernel: the graph will pin it.
    pub(super) fn touch(&mut self, bytes: &DeviceBytes) {
        if let Some(rec) = self.capture.as_mut() {
            rec.touched.insert(bytes.ptr, bytes.size);
        }
    }

    /// During a capture, `ptr` was allocated (so it did not exist before).
    pub(super) fn note_alloc(&mut self, ptr: cu::CUdeviceptr) {
        if let Some(rec) = self.capture.as_mut() {
            rec.allocated.insert(ptr);
        }
    }

    /// Keeps a dropped buffer out of the free list when a graph (or the running capture) addresses it; true when
    /// it was kept.
    pub(super) fn hold_if_pinned(&mut self, ptr: cu::CUdeviceptr, size: usize) -> bool {
        let held = if let Some(pin) = self.pins.get_mut(&ptr) {
            pin.freed = true;
            true
        } else if let Some(rec) = self
            .capture
            .as_mut()
            .filter(|r| r.touched.contains_key(&ptr))
        {
            rec.freed.insert(ptr);
            true
        } else {
            false
        };
        if held {
            self.in_use -= size;
            self.in_graphs += size;
        }
        held
    }

    /// A buffer a graph no longer needs, whose tensor is gone, back to the free list.
    fn unhold(&mut self, ptr: cu::CUdeviceptr, size: usize) {
        self.in_graphs -= size;
        self.cached += size;
        self.free.entry(size).or_default().push(ptr);
    }
}

/// Reads the element of type `T` at device address `at`, after the queued work.
///
/// # Safety
///
/// `at` must address a live element of a buffer of this context.
pub(crate) unsafe fn read_pinned<T: WithDType>(op: &'static str, at: u64) -> Result<T> {
    let mut value = [T::ZERO];
    // SAFETY: the caller promises `at` is a live element.
    unsafe { super::copy_to_host(op, at, &mut value) }?;
    Ok(value[0])
}

/// Refuses `op` (`what` says what it does) during a capture: the first refusal also fails the capture.
pub(crate) fn refuse_in_capture(op: &'static str, what: &str) -> Result<()> {
    if !capturing() {
        return Ok(());
    }
    let message = format!(
        "{what} cannot be recorded in a CUDA graph; do it before Cuda::capture or after CudaGraph::replay"
    );
    let st = state(op)?;
    if let Some(rec) = lock(st)
        .capture
        .as_mut()
        .filter(|r| r.on_capturing_thread())
    {
        rec.refused.get_or_insert((op, message.clone()));
    }
    Err(cuda_err(op, message))
}

/// The gate every launch (kernel or cuBLAS call) passes, held until the launch is queued: an error on another
/// thread than the capturing one while a capture runs (the device has one stream, so the work would be recorded
/// into that thread's graph, on buffers it never pinned). Holding the books' lock across the launch closes the
/// race with a capture that begins meanwhile: [`Cuda::capture`] begins under the same lock.
pub(super) fn launch_gate(op: &'static str) -> Result<std::sync::MutexGuard<'static, Cache>> {
    let cache = lock(state(op)?);
    match cache.capture.as_ref() {
        Some(rec) if !rec.on_capturing_thread() => Err(cuda_err(
            op,
            "another thread is capturing a CUDA graph on the device's stream; launch after it ends",
        )),
        _ => Ok(cache),
    }
}

/// The GPU work of one [`Cuda::capture`], replayable with one launch.
///
/// A replay runs the recorded kernels on the buffers they ran on at the capture, so the graph keeps every buffer
/// they address allocated (a dropped tensor's buffer returns to the cache when the graph goes:
/// [`MemoryStats::in_graphs`](super::MemoryStats::in_graphs) counts them). Inputs and parameters must be updated
/// in place ([`Tensor::copy_from`](crate::tensor::Tensor::copy_from), the optimizers' steps) and kept alive:
/// [`Self::replay`] refuses when one that existed before the capture was dropped.
pub struct CudaGraph {
    exec: cu::CUgraphExec,
    /// Every buffer the graph addresses, and whether it existed before the capture.
    buffers: Vec<(cu::CUdeviceptr, bool)>,
    checks: Vec<IndexCheck>,
    /// The checks' record words on the device, and where each replay copies them; `None` when the graph holds no
    /// check.
    records: Option<(CudaStorage<i64>, Mailbox)>,
    /// Record words handed out during the capture.
    records_used: usize,
    nodes: usize,
}

// SAFETY: an executable graph is a driver handle usable from any thread that has its context current (`state`
// makes it so before every use); the books it refers to sit behind the cache's lock.
unsafe impl Send for CudaGraph {}
// SAFETY: as for `Send`: `replay` only launches the handle, which the driver allows concurrently.
unsafe impl Sync for CudaGraph {}

impl Cuda {
    /// Records the GPU work `f` queues, without running it, as a [`CudaGraph`] that replays it with one launch.
    ///
    /// The graph replays the same kernels on the same buffers: inputs go in by writing into the tensors the
    /// capture read ([`Tensor::copy_from`](crate::tensor::Tensor::copy_from)), and results come out in the
    /// tensors it wrote (`f`'s return value, returned beside the graph). Everything else that `f` does on the host
    /// (shape checks, the autograd tape) runs once, here.
    ///
    /// Run `f` once eagerly first: work done only on a first call (cuBLAS's set-up, an optimizer's lazily made
    /// state) would otherwise be recorded and then redone on every replay. Reads to the host, host-to-device
    /// copies, [`Cuda::synchronize`] and the optimizers' steps are refused inside `f`; the first refusal fails the
    /// capture, naming the op. The device has one stream, so one capture runs at a time, and launches from other
    /// threads meanwhile fail (with an error naming the op) instead of being recorded.
    ///
    /// ```no_run
    /// # use typed_tensor::prelude::*;
    /// use typed_tensor::device::Cuda;
    /// let mut x: Tensor<f32, Rank1<4>, Cuda> = Tensor::zeros();
    /// let (graph, y) = Cuda::capture(|| (&x * 2.0).exp()).unwrap();
    /// x.copy_from(&Tensor::from_array([0.0, 0.5, 1.0, 1.5]));
    /// graph.replay().unwrap();
    /// assert_eq!(y.to_vec()[0], 1.0); // y holds exp(2 x) for the x written before the replay
    /// ```
    pub fn capture<R>(f: impl FnOnce() -> R) -> Result<(CudaGraph, R)> {
        let st = state(OP)?;
        // Made before the capture begins (allocations are not stream operations to record): the record words
        // of the gather/scatter kernels' index checks, and the page-locked memory each replay copies them to.
        let records = CudaStorage::<i64>::alloc(OP, Mailbox::CAPACITY)?;
        let records_at = records.ptr_at(0);
        let mailbox = Mailbox::new(OP)?;
        let mut cache = lock(st);
        if cache.capture.is_some() {
            return Err(cuda_err(OP, "another capture is running"));
        }
        // Begun under the books' lock, which every launch holds while it queues (`launch_gate`): a launch from
        // another thread lands before the capture or is refused, never recorded unseen.
        // Relaxed: allocations inside the capture are wanted (they are made once, and the graph keeps them).
        // SAFETY: the stream is the device's, alive for the process, and not capturing (the books say so).
        check(OP, unsafe {
            cu::cuStreamBeginCapture_v2(
                st.stream.as_inner(),
                cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
            )
        })?;
        cache.capture = Some(Recording::new(records_at));
        CAPTURING.store(true, Ordering::Relaxed);
        drop(cache);
        // From here on the session ends the capture and clears the books on every path, a panic in `f` included.
        let mut session = Session {
            st,
            capturing: true,
        };
        let out = f();
        copy_records_out(st, &mailbox);
        let (graph, rec) = session.end()?;
        let mut nodes = 0usize;
        let mut exec: cu::CUgraphExec = core::ptr::null_mut();
        // SAFETY: `graph` is the valid graph the capture produced; the driver writes its node count and an
        // executable graph to our locals.
        let built = check(OP, unsafe {
            cu::cuGraphGetNodes(graph, core::ptr::null_mut(), &mut nodes)
        })
        .and_then(|()| {
            // SAFETY: as above.
            check(OP, unsafe {
                cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0)
            })
        });
        destroy(graph);
        if let Err(e) = built {
            release_recording(st, rec);
            return Err(e);
        }
        // Pin what the graph addresses, so that no later allocation reuses it while the graph lives.
        let Recording {
            touched,
            allocated,
            freed,
            checks,
            records_used,
            ..
        } = rec;
        let mut cache = lock(st);
        let mut buffers = Vec::with_capacity(touched.len());
        for (ptr, size) in touched {
            let pin = cache.pins.entry(ptr).or_insert(Pin {
                graphs: 0,
                size,
                freed: false,
            });
            pin.graphs += 1;
            pin.freed |= freed.contains(&ptr);
            buffers.push((ptr, !allocated.contains(&ptr)));
        }
        drop(cache);
        let graph = CudaGraph {
            exec,
            buffers,
            records: (records_used > 0).then_some((records, mailbox)),
            records_used,
            checks,
            nodes,
        };
        reset_records(OP, records_at, records_used)?;
        Ok((graph, out))
    }
}

const OP: &str = "capture";

/// The books of a capture, taken out of the cache, and the flag cleared.
fn take_recording(st: &super::State) -> Option<Recording> {
    let mut cache = lock(st);
    CAPTURING.store(false, Ordering::Relaxed);
    cache.capture.take()
}

/// Buffers a failed capture held for its graph go back to the cache (nothing recorded can run any more).
fn release_recording(st: &super::State, rec: Recording) {
    let mut cache = lock(st);
    for ptr in rec.freed {
        if let Some(&size) = rec.touched.get(&ptr) {
            cache.unhold(ptr, size);
        }
    }
}

fn destroy(graph: cu::CUgraph) {
    if !graph.is_null() {
        // SAFETY: `graph` came from `cuStreamEndCapture` and is destroyed once (the executable graph, if any,
        // does not need it).
        let _ = unsafe { cu::cuGraphDestroy(graph) };
    }
}

/// A capture in progress: ends it and clears the books on every path out of [`Cuda::capture`].
struct Session {
    st: &'static super::State,
    /// The stream is capturing (to be ended).
    capturing: bool,
}

impl Session {
    /// Ends the capture: the graph and what the capture saw, or why it failed (the first refused op, or the
    /// driver's reason).
    fn end(&mut self) -> Result<(cu::CUgraph, Recording)> {
        self.capturing = false;
        let mut graph: cu::CUgraph = core::ptr::null_mut();
        // SAFETY: the stream is capturing (begun in `capture`, ended once, here); the driver writes the graph, or
        // null when the capture was invalidated, to our local.
        let ended = check(OP, unsafe {
            cu::cuStreamEndCapture(self.st.stream.as_inner(), &mut graph)
        });
        let rec = take_recording(self.st).unwrap_or_else(|| Recording::new(0));
        let failed = match (&rec.refused, ended) {
            (Some((op, message)), _) => Some(Error::Cuda {
                op: OP,
                message: format!("{op}: {message}"),
            }),
            (None, Err(e)) => Some(e),
            (None, Ok(())) => None,
        };
        match failed {
            Some(e) => {
                destroy(graph);
                release_recording(self.st, rec);
                Err(e)
            }
            None => Ok((graph, rec)),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.capturing {
            // `f` panicked, or beginning failed after the books were set: end and discard.
            if let Ok((graph, rec)) = self.end() {
                destroy(graph);
                release_recording(self.st, rec);
            }
        } else if let Some(rec) = take_recording(self.st) {
            release_recording(self.st, rec);
        }
    }
}

impl CudaGraph {
    /// Runs the recorded work again, on the buffers it was recorded on.
    ///
    /// The launch is queued like any kernel, and `replay` does not wait for it. An error, with nothing launched,
    /// when a tensor that the graph reads and that existed before the capture was dropped (it was replaced rather
    /// than updated in place, so the graph would read stale values).
    ///
    /// Out-of-range indices met by the graph's gather/scatter kernels (a bad label given to `cross_entropy`) are
    /// reported as the eager op reports them, but later: by the first `replay` after the GPU has finished the
    /// replay that met one (this replay is then already queued), or by [`Self::wait`], which waits for the GPU.
    /// Once reported, the record is cleared for the replays after.
    pub fn replay(&self) -> Result<()> {
        const OP: &str = "replay";
        let st = state(OP)?;
        {
            let cache = lock(st);
            let stale = self
                .buffers
                .iter()
                .any(|(ptr, before)| *before && cache.pins.get(ptr).is_some_and(|p| p.freed));
            if stale {
                return Err(cuda_err(
                    OP,
                    "a tensor the graph reads was dropped or replaced after the capture (update inputs and \
                     parameters in place, as Tensor::copy_from and the optimizers do, and keep them alive)",
                ));
            }
        }
        refuse_in_capture(OP, "replaying a graph")?;
        // SAFETY: `exec` is a live executable graph of this context, and every buffer it addresses is pinned
        // (allocated, and not handed to another tensor) while `self` lives.
        check(OP, unsafe {
            cu::cuGraphLaunch(self.exec, st.stream.as_inner())
        })?;
        self.report_found(OP, st)
    }

    /// Waits until the replays queued so far have run, and reports the first out-of-range index any of them met
    /// and no earlier call reported (see [`Self::replay`]).
    ///
    /// ```no_run
    /// # use typed_tensor::prelude::*;
    /// use typed_tensor::device::Cuda;
    /// let x: Tensor<f32, Rank2<2, 3>, Cuda> = Tensor::zeros();
    /// let mut idx: Tensor<u32, Rank2<2, 1>, Cuda> = Tensor::zeros();
    /// let (graph, _picked) = Cuda::capture(|| x.gather::<Axis<1>, u32, _>(&idx)).unwrap();
    /// idx.copy_from(&Tensor::from_array([[1], [3]])); // 3 is out of range on an axis of 3
    /// graph.replay().unwrap(); // queued: the GPU has not run it yet
    /// assert!(graph.wait().is_err()); // "gather: index 3 out of range ..."
    /// ```
    pub fn wait(&self) -> Result<()> {
        const OP: &str = "wait";
        let st = state(OP)?;
        refuse_in_capture(OP, "waiting for the GPU")?;
        st.stream.synchronize().map_err(|e| cuda_err(OP, e))?;
        self.report_found(OP, st)
    }

    /// The first bad index in the mailbox (what finished replays met), as its op's error. Reporting waits for the
    /// GPU first, so that the record is final and no copy is in flight when every record is cleared.
    fn report_found(&self, op: &'static str, st: &super::State) -> Result<()> {
        let Some((records, mailbox)) = &self.records else {
            return Ok(());
        };
        // The first check in recording order: the op the eager run would have stopped at.
        let Some(first) = self
            .checks
            .iter()
            .find(|c| mailbox.read(c.slot) != u64::MAX)
        else {
            return Ok(());
        };
        st.stream.synchronize().map_err(|e| cuda_err(op, e))?;
        let record = mailbox.read(first.slot);
        if record == u64::MAX {
            return Ok(()); // another thread's replay reported it meanwhile
        }
        reset_records(op, records.ptr_at(0), self.records_used)?;
        for slot in 0..self.records_used {
            mailbox.clear(slot);
        }
        Err((first.report)(record))
    }

    /// The number of operations recorded (kernel launches and copies).
    pub fn len(&self) -> usize {
        self.nodes
    }

    /// True when the capture recorded no GPU work.
    pub fn is_empty(&self) -> bool {
        self.nodes == 0
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        let Ok(st) = state("drop a graph") else {
            return;
        };
        // A replay may still run: wait before its buffers can be reused.
        let _ = st.stream.synchronize();
        // SAFETY: `exec` is this graph's own executable graph, destroyed once.
        let _ = unsafe { cu::cuGraphExecDestroy(self.exec) };
        let mut cache = lock(st);
        for (ptr, _) in &self.buffers {
            let Some(pin) = cache.pins.get_mut(ptr) else {
                continue;
            };
            pin.graphs -= 1;
            if pin.graphs == 0 {
                let (size, freed) = (pin.size, pin.freed);
                cache.pins.remove(ptr);
                if freed {
                    cache.unhold(*ptr, size);
                }
            }
        }
    }
}

impl core::fmt::Debug for CudaGraph {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CudaGraph")
            .field("nodes", &self.nodes)
            .field("buffers", &self.buffers.len())
            .field("index_checks", &self.checks.len())
            .finish()
    }
}
