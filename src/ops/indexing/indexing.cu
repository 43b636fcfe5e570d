// Gather and scatter-add along one axis with u32, i32 or i64 indices (src/device/cpu/indexing.rs has the semantics).
//
//   gather_{I}_{T}(n, li, walk, size, step, idx, src, out, err)
//   scatter_add_{I}_{T}(n, li, walk, ls, size, step, idx, src, out, err)
//   cross_entropy_backward_{I}_{T}(n, classes, llp, llab, lg, log_probs, labels, g, out)
//
// `li` is the index view; `walk` has its dims and the source (gather) or dense destination (scatter) strides with
// 0 on the axis, whose coordinate `idx` supplies (`step` apart, `size` long). An index outside [0, size) is not
// used: the first position holding one is kept in `*err` together with the index found there (`record_bad`: an
// atomic minimum over a host-initialised ULLONG_MAX), which the host reads back and reports. Scatter-add
// accumulates with atomics, so float sums of duplicates may round in any order.
#include "common.cuh"

template <typename I> __device__ __forceinline__ bool in_range(I v, size_t size) {
    return (long long)v >= 0 && (unsigned long long)(long long)v < size;
}
template <> __device__ __forceinline__ bool in_range<u32>(u32 v, size_t size) { return (size_t)v < size; }

// A bad index's record: its position in the high word (at most 2^32 - 2, so that no record is ULLONG_MAX, "none")
// and its value in the low word (u32 as it is; i32, and i64 saturated to the i32 range, as an i32). One atomic
// minimum then keeps the first bad position with the value found there, so the host needs no second read (a
// replayed graph's check is read later, after the index tensor may have been rewritten). Mirrored by
// `BadIndex::decode` in src/ops/indexing/cuda.rs.
template <typename I> __device__ __forceinline__ unsigned int index_bits(I v) { return (unsigned int)(int)v; }
template <> __device__ __forceinline__ unsigned int index_bits<u32>(u32 v) { return v; }
template <> __device__ __forceinline__ unsigned int index_bits<i64>(i64 v) {
    return (unsigned int)(int)(v < -2147483648LL ? -2147483648LL : v > 2147483647LL ? 2147483647LL : v);
}
template <typename I> __device__ __forceinline__ void record_bad(unsigned long long *err, size_t i, I v) {
    const unsigned long long pos = i < 0xfffffffeull ? (unsigned long long)i : 0xfffffffeull;
    atomicMin(err, (pos << 32) | index_bits(v));
}

template <typename I, typename T>
__device__ __forceinline__ void gather_body(size_t n, const Layout &li, const Layout &walk, size_t size, size_t step,
                                            const I *idx, const T *src, T *out, unsigned long long *err) {
    GRID_STRIDE_LOOP(i, n) {
        const I v = idx[strided_index(li, i)];
        if (in_range(v, size)) {
            out[i] = src[strided_index(walk, i) + (size_t)v * step];
        } else {
            out[i] = T();
            record_bad(err, i, v);
        }
    }
}

// Atomic add on any dtype: native for 32/64-bit words, a compare-and-swap on the enclosing aligned word for
// u8/i8/f16/bf16 (buffers are at least 4-byte aligned and padded).
template <typename T> __device__ __forceinline__ T add_elem(T a, T b) {
    if (IsInt<T>::value) return from_bits_u64<T>(bits_u64(a) + bits_u64(b));
    return down<T>(up(a) + up(b));
}
template <typename T> __device__ __forceinline__ void atomic_add_narrow(T *addr, T v) {
    unsigned int *word = (unsigned int *)((size_t)addr & ~(size_t)3);
    const unsigned int shift = ((size_t)addr & 3) * 8;
    const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        unsigned int bits = (assumed & mask) >> shift;
        T cur;
        memcpy(&cur, &bits, sizeof(T));
        const T sum = add_elem(cur, v);
        unsigned int nb = 0;
        memcpy(&nb, &sum, sizeof(T));
        old = atomicCAS(word, assumed, (assumed & ~mask) | (nb << shift));
    } while (assumed != old);
}
template <typename T> __device__ __forceinline__ void atomic_add_any(T *addr, T v) { atomic_add_narrow(addr, v); }
template <> __device__ __forceinline__ void atomic_add_any<u32>(u32 *addr, u32 v) { atomicAdd(addr, v); }
template <> __device__ __forceinline__ void atomic_add_any<i32>(i32 *addr, i32 v) { atomicAdd(addr, v); }
template <> __device__ __forceinline__ void atomic_add_any<i64>(i64 *addr, i64 v) {
    atomicAdd((unsigned long long *)addr, (unsigned long long)v);
}
template <> __device__ __forceinline__ void atomic_add_any<f32>(f32 *addr, f32 v) { atomicAdd(addr, v); }
template <> __device__ __forceinline__ void atomic_add_any<f64>(f64 *addr, f64 v) { atomicAdd(addr, v); }

template <typename I, typename T>
__device__ __forceinline__ void scatter_add_body(size_t n, const Layout &li, const Layout &walk, const Layout &ls,
                                                 size_t size, size_t step, const I *idx, const T *src, T *out,
                                                 unsigned long long *err) {
    GRID_STRIDE_LOOP(i, n) {
        const I v = idx[strided_index(li, i)];
        if (in_range(v, size)) atomic_add_any(out + strided_index(walk, i) + (size_t)v * step, src[strided_index(ls, i)]);
        else record_bad(err, i, v);
    }
}

#define INDEX_KERNELS(T, I)                                                                                      \
    extern "C" __global__ void gather_##I##_##T(size_t n, Layout li, Layout walk, size_t size, size_t step,      \
                                                const I *idx, const T *src, T *out, unsigned long long *err) {  \
        gather_body<I, T>(n, li, walk, size, step, idx, src, out, err);                                          \
    }                                                                                                            \
    extern "C" __global__ void scatter_add_##I##_##T(size_t n, Layout li, Layout walk, Layout ls, size_t size,   \
                                                     size_t step, const I *idx, const T *src, T *out,            \
                                                     unsigned long long *err) {                                  \
        scatter_add_body<I, T>(n, li, walk, ls, size, step, idx, src, out, err);                                 \
    }
FOR_ALL_DTYPES(INDEX_KERNELS, u32)
FOR_ALL_DTYPES(INDEX_KERNELS, i32)
FOR_ALL_DTYPES(INDEX_KERNELS, i64)

// Cross entropy's gradient with respect to the logits (src/ops/indexing/host.rs has the semantics): over the
// log-probabilities viewed by `llp` (the classes its last axis), out[i] = exp(log_probs) g[row] less g[row] at
// the row's label, written densely; `labels` and `g` are read once per element through their views of the rows
// (`llab`, `lg`). A label outside the classes takes nothing off (the forward pass's gather reported it).
template <typename I, typename T>
__device__ __forceinline__ void cross_entropy_backward_body(size_t n, size_t classes, const Layout &llp,
                                                            const Layout &llab, const Layout &lg, const T *log_probs,
                                                            const I *labels, const T *g, T *out) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(i, n) {
        const size_t row = i / classes;
        const A gr = up(g[strided_index(lg, row)]);
        const I label = labels[strided_index(llab, row)];
        A v = m_exp(up(log_probs[strided_index(llp, i)])) * gr;
        if (in_range(label, classes) && (size_t)(long long)label == i - row * classes) v -= gr;
        out[i] = down<T>(v);
    }
}

#define CROSS_ENTROPY_KERNEL(T, I)                                                                               \
    extern "C" __global__ void cross_entropy_backward_##I##_##T(size_t n, size_t classes, Layout llp, Layout llab, \
                                                                Layout lg, const T *log_probs, const I *labels,  \
                                                                const T *g, T *out) {                           \
        cross_entropy_backward_body<I, T>(n, classes, llp, llab, lg, log_probs, labels, g, out);                 \
    }
FOR_FLOAT_DTYPES(CROSS_ENTROPY_KERNEL, u32)
FOR_FLOAT_DTYPES(CROSS_ENTROPY_KERNEL, i32)
FOR_FLOAT_DTYPES(CROSS_ENTROPY_KERNEL, i64)
