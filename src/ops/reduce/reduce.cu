// Reductions over any set of axes, with the semantics of src/ops/reduce.rs.
//
// The host splits the input layout into the kept axes (`lo`, one position per output) and the reduced axes
// (`lr`, `count` elements per output). A task is (output, part): a block folds the part's range of reduced
// elements into a state, tree-reduces it over the block, and either finishes it into the output (one part) or
// stores the state for `merge_{op}_{T}`, which folds the parts of each output (a block each) and finishes them.
//
//   reduce_{op}_{T}(n_out, parts, chunk, count, lo, lr, x, partial, out, param)
//   merge_{op}_{T}(n_out, parts, count, partial, out, param)
//
// States are at most 32 bytes (the host sizes `partial` with that bound). Integers accumulate in i64 with
// wrapping arithmetic (their results truncate to T, as on the CPU); f16/bf16/f32 in float; f64 in double.
#include "accumulate.cuh"
#include "block.cuh"

// ---- ops: init, step (element x at reduced index r), merge (commutative), finish ------------------------------
template <typename T> struct OpSum {
    typedef typename RAcc<T>::type S;
    typedef T Out;
    __device__ static S init() { return (S)0; }
    __device__ static S step(S s, T x, size_t) { return acc_add(s, to_racc(x)); }
    __device__ S operator()(S a, S b) const { return acc_add(a, b); }
    __device__ static Out finish(S s, size_t, double) { return from_racc<T>(s); }
};
template <typename T> struct OpProd {
    typedef typename RAcc<T>::type S;
    typedef T Out;
    __device__ static S init() { return (S)1; }
    __device__ static S step(S s, T x, size_t) { return acc_mul(s, to_racc(x)); }
    __device__ S operator()(S a, S b) const { return acc_mul(a, b); }
    __device__ static Out finish(S s, size_t, double) { return from_racc<T>(s); }
};
template <typename T> struct OpMean {
    typedef typename RAcc<T>::type S;
    typedef T Out;
    __device__ static S init() { return (S)0; }
    __device__ static S step(S s, T x, size_t) { return s + to_racc(x); }
    __device__ S operator()(S a, S b) const { return a + b; }
    __device__ static Out finish(S s, size_t count, double) { return from_racc<T>(s / (S)count); }
};
template <typename T> struct OpNorm {
    typedef typename RAcc<T>::type S;
    typedef T Out;
    __device__ static S init() { return (S)0; }
    __device__ static S step(S s, T x, size_t) {
        S v = to_racc(x);
        return s + v * v;
    }
    __device__ S operator()(S a, S b) const { return a + b; }
    __device__ static Out finish(S s, size_t, double) { return from_racc<T>(m_sqrt(s)); }
};
// NaN wins, as on the CPU.
template <typename T> struct OpMax {
    typedef typename RAcc<T>::type S;
    typedef T Out;
    __device__ static S init() { return lowest<S>(); }
    __device__ static S step(S s, T x, size_t) { return m_max(s, to_racc(x)); }
    __device__ S operator()(S a, S b) const { return m_max(a, b); }
    __device__ static Out finish(S s, size_t, double) { return from_racc<T>(s); }
};
template <typename T> struct OpMin {
    typedef typename RAcc<T>::type S;
    typedef T Out;
    __device__ static S init() { return highest<S>(); }
    __device__ static S step(S s, T x, size_t) { return m_min(s, to_racc(x)); }
    __device__ S operator()(S a, S b) const { return m_min(a, b); }
    __device__ static Out finish(S s, size_t, double) { return from_racc<T>(s); }
};

// argmax/argmin: the first index of the extreme (the first NaN if any), whatever order states merge in; the
// `_last` forms the last index (LAST).
template <typename A> struct ArgState {
    A v;
    long long index;  // -1: no element yet
};
template <typename T, bool MAX, bool LAST> struct OpArg {
    typedef typename RAcc<T>::type A;
    typedef ArgState<A> S;
    typedef u32 Out;
    __device__ static S init() {
        S s;
        s.v = (A)0;
        s.index = -1;
        return s;
    }
    __device__ static S step(S s, T x, size_t r) {
        S b;
        b.v = to_racc(x);
        b.index = (long long)r;
        return OpArg()(s, b);
    }
    __device__ S operator()(S a, S b) const {
        if (a.index < 0) return b;
        if (b.index < 0) return a;
        const bool an = m_isnan(a.v), bn = m_isnan(b.v);
        const bool a_first = a.index < b.index;
        if (an || bn) {
            if (an && bn) return a_first != LAST ? a : b;
            return an ? a : b;
        }
        if (MAX ? b.v > a.v : b.v < a.v) return b;
        if (MAX ? a.v > b.v : a.v < b.v) return a;
        return a_first != LAST ? a : b;
    }
    __device__ static Out finish(S s, size_t, double) { return s.index < 0 ? 0u : (u32)s.index; }
};
template <typename T> struct OpArgmax : OpArg<T, true, false> {};
template <typename T> struct OpArgmin : OpArg<T, false, false> {};
template <typename T> struct OpArgmaxLast : OpArg<T, true, true> {};
template <typename T> struct OpArgminLast : OpArg<T, false, true> {};

// Welford per thread, Chan et al. to merge; `param` is the correction (0: population, 1: unbiased).
template <typename A> struct VarState {
    unsigned long long n;
    A mean, m2;
};
template <typename T> struct OpVar {
    typedef typename RAcc<T>::type A;
    typedef VarState<A> S;
    typedef T Out;
    __device__ static S init() {
        S s;
        s.n = 0;
        s.mean = (A)0;
        s.m2 = (A)0;
        return s;
    }
    __device__ static S step(S s, T xt, size_t) {
        const A x = to_racc(xt);
        s.n += 1;
        const A delta = x - s.mean;
        s.mean += delta / (A)s.n;
        s.m2 += delta * (x - s.mean);
        return s;
    }
    __device__ S operator()(S a, S b) const {
        if (a.n == 0) return b;
        if (b.n == 0) return a;
        S s;
        s.n = a.n + b.n;
        const A na = (A)a.n, nb = (A)b.n, nn = (A)s.n, delta = b.mean - a.mean;
        s.mean = a.mean + delta * nb / nn;
        s.m2 = a.m2 + b.m2 + delta * delta * na * nb / nn;
        return s;
    }
    __device__ static Out finish(S s, size_t, double correction) {
        const unsigned long long c = (unsigned long long)correction;
        const unsigned long long d = s.n > c ? s.n - c : 0;
        return from_racc<T>(s.m2 / (A)d);
    }
};

template <typename T> struct OpLogsumexp {
    typedef typename RAcc<T>::type A;
    typedef LseState<A> S;
    typedef T Out;
    __device__ static S init() { return lse_empty<A>(); }
    __device__ static S step(S s, T x, size_t) { return lse_merge(s, lse_of(to_racc(x))); }
    __device__ S operator()(S a, S b) const { return lse_merge(a, b); }
    __device__ static Out finish(S s, size_t, double) { return from_racc<T>(lse_finish(s)); }
};

// Folds the elements of one 16-byte load, the first at index `r`, in order.
template <typename Op, typename T>
__device__ __forceinline__ typename Op::S fold16(typename Op::S s, const uint4 &w, size_t r) {
    const T *v = reinterpret_cast<const T *>(&w);
#pragma unroll
    for (size_t j = 0; j < 16 / sizeof(T); ++j) s = Op::step(s, v[j], r + j);
    return s;
}

template <typename Op, typename T>
__device__ __forceinline__ void reduce_body(size_t n_out, size_t parts, size_t chunk, size_t count, const Layout &lo,
                                            const Layout &lr, const T *x, void *partial, typename Op::Out *out,
                                            double param) {
    typedef typename Op::S S;
    const Op merge;
    for (size_t task = blockIdx.x; task < n_out * parts; task += gridDim.x) {
        const size_t o = task / parts, p = task % parts;
        const T *base = x + strided_index(lo, o);
        const size_t start = p * chunk, end = min(count, start + chunk);
        S s = Op::init();
        size_t r = start + threadIdx.x;
        if (lr.contiguous && start < end && reinterpret_cast<size_t>(base + start) % 16 == 0) {
            // Four 16-byte loads in flight per thread before folding them: a memory-bound loop needs bytes in
            // flight, and with four scalar loads the SASS nvcc 11.8 builds reached 0.68x of copy bandwidth on an
            // H100 (the driver's own compilation of the same PTX, 0.83x). The host aligns the parts' starts.
            constexpr size_t V = 16 / sizeof(T);
            const size_t b = blockDim.x, groups = (end - start) / V;
            const uint4 *vec = reinterpret_cast<const uint4 *>(base + start);
            size_t g = threadIdx.x;
            for (; g + 3 * b < groups; g += 4 * b) {
                const uint4 w0 = vec[g], w1 = vec[g + b], w2 = vec[g + 2 * b], w3 = vec[g + 3 * b];
                s = fold16<Op, T>(s, w0, start + g * V);
                s = fold16<Op, T>(s, w1, start + (g + b) * V);
                s = fold16<Op, T>(s, w2, start + (g + 2 * b) * V);
                s = fold16<Op, T>(s, w3, start + (g + 3 * b) * V);
            }
            for (; g < groups; g += b) s = fold16<Op, T>(s, vec[g], start + g * V);
            r = start + groups * V + threadIdx.x;  // the tail, element by element below
        } else if (lr.contiguous) {
            // Four loads in flight per thread before folding them (one at a time reached ~65% of copy bandwidth).
            const size_t b = blockDim.x;
            for (; r + 3 * b < end; r += 4 * b) {
                const T x0 = base[r], x1 = base[r + b], x2 = base[r + 2 * b], x3 = base[r + 3 * b];
                s = Op::step(Op::step(Op::step(Op::step(s, x0, r), x1, r + b), x2, r + 2 * b), x3, r + 3 * b);
            }
        }
        for (; r < end; r += blockDim.x) s = Op::step(s, base[strided_index(lr, r)], r);
        s = block_reduce(s, Op::init(), merge);
        if (threadIdx.x == 0) {
            if (parts == 1) out[o] = Op::finish(s, count, param);
            else reinterpret_cast<S *>(partial)[task] = s;
        }
    }
}

template <typename Op>
__device__ __forceinline__ void merge_body(size_t n_out, size_t parts, size_t count, const void *partial,
                                           typename Op::Out *out, double param) {
    typedef typename Op::S S;
    const S *states = reinterpret_cast<const S *>(partial);
    const Op merge;
    // A block per output: its threads fold the parts, then a tree joins them (one thread folding ~1000 parts in
    // order took ~15 us of a 64M-element sum on an H100).
    for (size_t o = blockIdx.x; o < n_out; o += gridDim.x) {
        S s = Op::init();
        for (size_t p = threadIdx.x; p < parts; p += blockDim.x) s = merge(s, states[o * parts + p]);
        s = block_reduce(s, Op::init(), merge);
        if (threadIdx.x == 0) out[o] = Op::finish(s, count, param);
    }
}

#define REDUCE_KERNELS(T, OP)                                                                                    \
    extern "C" __global__ void reduce_##OP##_##T(size_t n_out, size_t parts, size_t chunk, size_t count, Layout lo, \
                                                 Layout lr, const T *x, void *partial,                          \
                                                 Op_##OP<T>::Out *out, double param) {                          \
        reduce_body<Op_##OP<T>, T>(n_out, parts, chunk, count, lo, lr, x, partial, out, param);               \
    }                                                                                                            \
    extern "C" __global__ void merge_##OP##_##T(size_t n_out, size_t parts, size_t count, const void *partial,   \
                                                Op_##OP<T>::Out *out, double param) {                           \
        merge_body<Op_##OP<T> >(n_out, parts, count, partial, out, param);                                     \
    }

// Spelled with an underscore so the macro can paste the op name.
template <typename T> using Op_sum = OpSum<T>;
template <typename T> using Op_prod = OpProd<T>;
template <typename T> using Op_max = OpMax<T>;
template <typename T> using Op_min = OpMin<T>;
template <typename T> using Op_argmax = OpArgmax<T>;
template <typename T> using Op_argmin = OpArgmin<T>;
template <typename T> using Op_argmax_last = OpArgmaxLast<T>;
template <typename T> using Op_argmin_last = OpArgminLast<T>;
template <typename T> using Op_mean = OpMean<T>;
template <typename T> using Op_var = OpVar<T>;
template <typename T> using Op_logsumexp = OpLogsumexp<T>;
template <typename T> using Op_norm = OpNorm<T>;

FOR_ALL_DTYPES(REDUCE_KERNELS, sum)
FOR_ALL_DTYPES(REDUCE_KERNELS, prod)
FOR_ALL_DTYPES(REDUCE_KERNELS, max)
FOR_ALL_DTYPES(REDUCE_KERNELS, min)
FOR_ALL_DTYPES(REDUCE_KERNELS, argmax)
FOR_ALL_DTYPES(REDUCE_KERNELS, argmin)
FOR_ALL_DTYPES(REDUCE_KERNELS, argmax_last)
FOR_ALL_DTYPES(REDUCE_KERNELS, argmin_last)
FOR_FLOAT_DTYPES(REDUCE_KERNELS, mean)
FOR_FLOAT_DTYPES(REDUCE_KERNELS, var)
FOR_FLOAT_DTYPES(REDUCE_KERNELS, logsumexp)
FOR_FLOAT_DTYPES(REDUCE_KERNELS, norm)
