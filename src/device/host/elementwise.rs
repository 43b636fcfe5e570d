//! Elementwise loops over host memory.
//!
//! Dense slices run in loops compiled once per instruction set (AVX-512, AVX2, baseline; the widest the CPU has
//! is picked at run time with `std`, as the `gemm` crate does) and, from [`PARALLEL_MIN`] elements on, on
//! rayon's threads in chunks (`std` only). Strided views walk row by row with [`for_each_row`], large ones in blocks
//! of whole indices of their first axis on rayon's threads (`std` only). Every loop writes
//! either into output slots (the `map`/`zip` forms behind the allocating kernels and `_into`) or over its own
//! input (the `update` forms behind `+=`); none allocates.

use crate::dtype::WithDType;
use crate::layout::{for_each_row, Layout};
use core::mem::MaybeUninit;

/// From this many elements on, dense loops are split across threads: below it the split costs more (a few
/// microseconds) than it saves.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) const PARALLEL_MIN: usize = 1 << 18;

/// A dense loop, monomorphised into one clone per instruction set by [`simd`]; `run` must be
/// `#[inline(always)]` so its body compiles inside each clone.
pub(crate) trait DenseLoop {
    fn run(self);
}

struct Map<'a, T, U, F> {
    src: &'a [T],
    out: &'a mut [MaybeUninit<U>],
    f: &'a F,
}
impl<T: Copy, U, F: Fn(T) -> U> DenseLoop for Map<'_, T, U, F> {
    #[inline(always)]
    fn run(self) {
        for (o, &x) in self.out.iter_mut().zip(self.src) {
            o.write((self.f)(x));
        }
    }
}

struct Zip<'a, T, U, F> {
    a: &'a [T],
    b: &'a [T],
    out: &'a mut [MaybeUninit<U>],
    f: &'a F,
}
impl<T: Copy, U, F: Fn(T, T) -> U> DenseLoop for Zip<'_, T, U, F> {
    #[inline(always)]
    fn run(self) {
        for ((o, &x), &y) in self.out.iter_mut().zip(self.a).zip(self.b) {
            o.write((self.f)(x, y));
        }
    }
}

/// A zip whose second (or, `SWAP`, first) operand is one value repeated: a broadcast scalar or row.
struct ZipScalar<'a, T, U, F, const SWAP: bool> {
    a: &'a [T],
    y: T,
    out: &'a mut [MaybeUninit<U>],
    f: &'a F,
}
impl<T: Copy, U, F: Fn(T, T) -> U, const SWAP: bool> DenseLoop for ZipScalar<'_, T, U, F, SWAP> {
    #[inline(always)]
    fn run(self) {
        let y = self.y;
        for (o, &x) in self.out.iter_mut().zip(self.a) {
            o.write(if SWAP { (self.f)(y, x) } else { (self.f)(x, y) });
        }
    }
}

struct Update<'a, T, F> {
    dst: &'a mut [T],
    f: &'a F,
}
impl<T: Copy, F: Fn(T) -> T> DenseLoop for Update<'_, T, F> {
    #[inline(always)]
    fn run(self) {
        for x in self.dst.iter_mut() {
            *x = (self.f)(*x);
        }
    }
}

/// An in-place zip whose operand repeats one value (`x += scalar`, a broadcast column).
struct UpdateScalar<'a, T, F> {
    dst: &'a mut [T],
    y: T,
    f: &'a F,
}
impl<T: Copy, F: Fn(T, T) -> T> DenseLoop for UpdateScalar<'_, T, F> {
    #[inline(always)]
    fn run(self) {
        let y = self.y;
        for x in self.dst.iter_mut() {
            *x = (self.f)(*x, y);
        }
    }
}

struct UpdateZip<'a, T, F> {
    dst: &'a mut [T],
    b: &'a [T],
    f: &'a F,
}
impl<T: Copy, F: Fn(T, T) -> T> DenseLoop for UpdateZip<'_, T, F> {
    #[inline(always)]
    fn run(self) {
        for (x, &y) in self.dst.iter_mut().zip(self.b) {
            *x = (self.f)(*x, y);
        }
    }
}

/// Runs `k` in the clone for the widest vector unit the CPU has. Without FMA contraction (Rust never fuses
/// `a * b + c` implicitly) every clone gives bit-identical results.
#[inline(always)]
pub(crate) fn simd<K: DenseLoop>(k: K) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature was detected on this CPU.
            return unsafe { run_avx512(k) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the feature was detected on this CPU.
            return unsafe { run_avx2(k) };
        }
    }
    k.run()
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f")]
unsafe fn run_avx512<K: DenseLoop>(k: K) {
    k.run()
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<K: DenseLoop>(k: K) {
    k.run()
}

/// Elements per parallel chunk: a few chunks per thread so a slow core does not hold the others up.
#[cfg(feature = "std")]
fn chunk_len(n: usize) -> usize {
    (n / (4 * rayon::current_num_threads())).max(PARALLEL_MIN / 4)
}

/// `job(piece, start)` over consecutive pieces of `out`, `chunk` elements each (the last may be shorter), side by
/// side on rayon's threads; `start` is the piece's first index. The job is a trait object so that rayon's
/// machinery (its jobs, joins and splitting) is compiled once per element type, not once per op: generic over
/// the closure, it was about 14% of the LLVM IR of a user's release build of a 49-layer MLP
/// (tools/compile-bench), every op and dtype the model used bringing its own copy. One dynamic call per piece of
/// at least [`PARALLEL_MIN`] / 4 elements costs nothing measurable.
#[cfg(feature = "std")]
#[inline(never)]
fn par_chunks<O: Send>(out: &mut [O], chunk: usize, job: &(dyn Fn(&mut [O], usize) + Sync)) {
    use rayon::prelude::*;
    out.par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(i, piece)| job(piece, i * chunk));
}

/// From this many output elements on, [`each_chunk`] runs its chunks on threads: lower than [`PARALLEL_MIN`]
/// because each of its outputs costs several reads (a window, a lane's taps, a prefix).
#[cfg(feature = "std")]
const CHUNKED_PARALLEL_MIN: usize = 1 << 15;

/// Calls `f(index, chunk)` for each `len`-element chunk of `out` (a plane, a block of lanes, a slab): through
/// [`par_chunks`] on the CPU's threads when `parallel` and `out` holds several chunks and at least
/// [`CHUNKED_PARALLEL_MIN`] elements, else in order (`Embedded`, small outputs). The host kernels that write their
/// output a chunk at a time share it.
#[inline]
pub(crate) fn each_chunk<O: Send>(
    out: &mut [O],
    len: usize,
    parallel: bool,
    f: impl Fn(usize, &mut [O]) + Sync,
) {
    if len == 0 {
        return;
    }
    #[cfg(feature = "std")]
    if parallel && out.len() >= CHUNKED_PARALLEL_MIN && out.len() > len {
        return par_chunks(out, len, &|chunk, at| f(at / len, chunk));
    }
    let _ = parallel;
    for (i, chunk) in out.chunks_mut(len).enumerate() {
        f(i, chunk);
    }
}

/// Splits the dense loop `k_at(out_chunk, start)` over chunks of `out`, on threads when `out` is large.
#[inline(always)]
fn dense<O: Send>(out: &mut [O], k_at: impl Fn(&mut [O], usize) + Sync) {
    #[cfg(feature = "std")]
    if out.len() >= PARALLEL_MIN {
        return par_chunks(out, chunk_len(out.len()), &k_at);
    }
    k_at(out, 0)
}

/// `f` over a dense slice into `out` (same length).
#[inline(always)]
fn map_dense_into<T: WithDType, U: Send>(
    src: &[T],
    out: &mut [MaybeUninit<U>],
    f: &(impl Fn(T) -> U + Sync),
) {
    dense(out, |o, start| {
        simd(Map {
            src: &src[start..start + o.len()],
            out: o,
            f,
        })
    });
}

/// Splits a strided walk that writes `out` (row-major over `layouts`' common dims) into blocks of whole
/// indices of axis 0, run side by side on rayon's threads: `walk(block, layouts narrowed to the block)`. Only
/// for large outputs (as the dense loops) whose first axis has at least two entries; `false` when it did not
/// split, and the caller walks serially.
#[cfg(feature = "std")]
fn par_row_blocks<O: Send, const K: usize>(
    out: &mut [O],
    layouts: [&Layout; K],
    walk: impl Fn(&mut [O], [Layout; K]) + Sync,
) -> bool {
    let dims = layouts[0].dims();
    if out.len() < PARALLEL_MIN || dims.is_empty() || dims[0] < 2 {
        return false;
    }
    let (rows, inner) = (dims[0], out.len() / dims[0]);
    let per = rows.div_ceil((4 * rayon::current_num_threads()).min(rows));
    par_chunks(out, per * inner, &|block, at| {
        let (start, len) = (at / inner, block.len() / inner);
        let narrowed = layouts.map(|l| {
            l.narrow("elementwise", 0, start, len)
                .expect("typed-tensor internal error: a block of rows outside the view")
        });
        walk(block, narrowed)
    });
    true
}

/// Writes `f` of every element of a view into `out` (`layout.numel()` long), in row-major order.
#[inline(always)]
pub(crate) fn map_view_into<T: WithDType, U: Copy + Send>(
    out: &mut [MaybeUninit<U>],
    src: &[T],
    layout: &Layout,
    f: impl Fn(T) -> U + Sync,
) {
    if let Some(range) = layout.contiguous_range() {
        return map_dense_into(&src[range], out, &f);
    }
    #[cfg(feature = "std")]
    if par_row_blocks(out, [layout], |block, [l]| map_rows(block, src, &l, &f)) {
        return;
    }
    map_rows(out, src, layout, &f)
}

/// [`map_view_into`]'s serial walk, row by row.
#[inline(always)]
fn map_rows<T: WithDType, U: Copy + Send>(
    out: &mut [MaybeUninit<U>],
    src: &[T],
    layout: &Layout,
    f: &(impl Fn(T) -> U + Sync),
) {
    let mut at = 0;
    for_each_row(layout.dims(), [layout], |[o], len, [s]| {
        let row = &mut out[at..at + len];
        if s == 1 {
            simd(Map {
                src: &src[o..o + len],
                out: row,
                f,
            });
        } else if s == 0 {
            // One value repeated along the row (a broadcast view, a spread gradient): computed once.
            let y = f(src[o]);
            row.iter_mut().for_each(|x| {
                x.write(y);
            });
        } else {
            for (i, x) in row.iter_mut().enumerate() {
                x.write(f(src[o + i * s]));
            }
        }
        at += len;
    });
}

/// Writes `f` over pairs of two views with the same dims (already broadcast) into `out`.
#[inline(always)]
pub(crate) fn zip_views_into<T: WithDType, U: Copy + Send>(
    out: &mut [MaybeUninit<U>],
    (a, la): (&[T], &Layout),
    (b, lb): (&[T], &Layout),
    f: impl Fn(T, T) -> U + Sync,
) {
    if let (Some(ra), Some(rb)) = (la.contiguous_range(), lb.contiguous_range()) {
        let (a, b) = (&a[ra], &b[rb]);
        return dense(out, |o, start| {
            let range = start..start + o.len();
            simd(Zip {
                a: &a[range.clone()],
                b: &b[range],
                out: o,
                f: &f,
            })
        });
    }
    #[cfg(feature = "std")]
    if par_row_blocks(out, [la, lb], |block, [la, lb]| {
        zip_rows(block, (a, &la), (b, &lb), &f)
    }) {
        return;
    }
    zip_rows(out, (a, la), (b, lb), &f)
}

/// [`zip_views_into`]'s serial walk, row by row.
#[inline(always)]
fn zip_rows<T: WithDType, U: Copy + Send>(
    out: &mut [MaybeUninit<U>],
    (a, la): (&[T], &Layout),
    (b, lb): (&[T], &Layout),
    f: &(impl Fn(T, T) -> U + Sync),
) {
    let mut at = 0;
    for_each_row(la.dims(), [la, lb], |[oa, ob], len, [sa, sb]| {
        let row = &mut out[at..at + len];
        match (sa, sb) {
            (1, 1) => simd(Zip {
                a: &a[oa..oa + len],
                b: &b[ob..ob + len],
                out: row,
                f,
            }),
            (1, 0) => simd(ZipScalar::<_, _, _, false> {
                a: &a[oa..oa + len],
                y: b[ob],
                out: row,
                f,
            }),
            (0, 1) => simd(ZipScalar::<_, _, _, true> {
                a: &b[ob..ob + len],
                y: a[oa],
                out: row,
                f,
            }),
            (0, 0) => {
                let y = f(a[oa], b[ob]);
                row.iter_mut().for_each(|o| {
                    o.write(y);
                });
            }
            _ => {
                for (i, o) in row.iter_mut().enumerate() {
                    o.write(f(a[oa + i * sa], b[ob + i * sb]));
                }
            }
        }
        at += len;
    });
}

/// Views initialised elements as slots for the host loops (which write through `MaybeUninit` so that they can
/// fill fresh, uninitialised buffers too).
///
/// # Safety
///
/// The caller must write only initialised values into the slots (never `MaybeUninit::uninit()`): `out`'s owner
/// reads them as `T` afterwards. The host loops (`map_view_into`, `zip_views_into`, ...) only ever `write` a
/// computed value.
pub(crate) unsafe fn as_slots<T: Copy>(out: &mut [T]) -> &mut [MaybeUninit<T>] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and the caller keeps the elements initialised (the contract).
    unsafe { &mut *(out as *mut [T] as *mut [MaybeUninit<T>]) }
}

/// The values in `slots`.
///
/// # Safety
///
/// Every slot holds an initialised value.
pub(crate) unsafe fn assume_init<T>(slots: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and every slot is initialised (the contract).
    unsafe { &mut *(slots as *mut [MaybeUninit<T>] as *mut [T]) }
}

/// `slots` filled with zeros, as values: the destination of a kernel that accumulates into its output or writes
/// it in no fixed order.
#[inline]
pub(crate) fn zeroed<T: WithDType>(slots: &mut [MaybeUninit<T>]) -> &mut [T] {
    slots.fill(MaybeUninit::new(T::ZERO));
    // SAFETY: every slot was just written.
    unsafe { assume_init(slots) }
}

/// `dst[i] = f(dst[i])` over a dense slice.
#[inline(always)]
pub(crate) fn update_dense<T: WithDType>(dst: &mut [T], f: impl Fn(T) -> T + Sync) {
    dense(dst, |d, _| simd(Update { dst: d, f: &f }));
}

/// `dst[p] = f(dst[p], b[p])` where `dst` is dense with `b`'s (already broadcast) dims.
#[inline(always)]
pub(crate) fn update_zip<T: WithDType>(
    dst: &mut [T],
    (b, lb): (&[T], &Layout),
    f: impl Fn(T, T) -> T + Sync,
) {
    if let Some(rb) = lb.contiguous_range() {
        let b = &b[rb];
        return dense(dst, |d, start| {
            simd(UpdateZip {
                b: &b[start..start + d.len()],
                dst: d,
                f: &f,
            })
        });
    }
    let ld = Layout::contiguous(*lb.dims());
    for_each_row(lb.dims(), [&ld, lb], |[od, ob], len, [sd, sb]| {
        match (sd, sb) {
            (1, 1) => simd(UpdateZip {
                dst: &mut dst[od..od + len],
                b: &b[ob..ob + len],
                f: &f,
            }),
            (1, 0) => simd(UpdateScalar {
                dst: &mut dst[od..od + len],
                y: b[ob],
                f: &f,
            }),
            _ => {
                for i in 0..len {
                    let k = od + i * sd;
                    dst[k] = f(dst[k], b[ob + i * sb]);
                }
            }
        }
    });
}

/// `on_true` where the mask is non-zero, `on_false` elsewhere, into `out` (the mask's numel, all written).
pub(crate) fn where_into<T: WithDType>(
    out: &mut [MaybeUninit<T>],
    (m, lm): (&[u8], &Layout),
    (t, lt): (&[T], &Layout),
    (f, lf): (&[T], &Layout),
) {
    let mut at = 0;
    for_each_row(
        lm.dims(),
        [lm, lt, lf],
        |[om, ot, of], len, [sm, st, sf]| {
            for (i, o) in out[at..at + len].iter_mut().enumerate() {
                o.write(if m[om + i * sm] != 0 {
                    t[ot + i * st]
                } else {
                    f[of + i * sf]
                });
            }
            at += len;
        },
    );
}
