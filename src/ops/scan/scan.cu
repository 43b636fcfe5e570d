// Scans along one axis (cumsum, cumprod, cummax/cummin with their indices, logcumsumexp) and cumprod's gradient,
// with the recurrences of the host devices (src/ops/scan/mod.rs `Scan::run`, src/ops/scan/host.rs): a thread per
// lane walks it in order, so integer results and maxima are the host's bits and float sums agree to rounding.
//
//   scan_{op}_{T}(lanes, len, outer_in, outer_out, in_stride, out_stride, x, out, flags)
//   scan_index_{op}_{T}(lanes, len, outer_in, outer_out, in_stride, out_stride, x, out_u32)
//   cumprod_backward_{T}(lanes, len, outer_x, outer_g, outer_out, x_stride, g_stride, out_stride, x, g, out,
//                        exclusive)
//
// `flags` (src/ops/scan/mod.rs `Cumulative::flags`): bit 0 walks each lane from its last element, bit 1 writes
// each running value before its element joins (an exclusive scan; sums, products and log-sum-exp only, as on the
// host: a running maximum or minimum is always inclusive).
//
// `outer_*` walk the lanes' first elements (in the input views and the dense output); a lane's elements are
// `*_stride` apart.
#include "accumulate.cuh"

#define SCAN_REVERSE(flags) (((flags) & 1ull) != 0)
#define SCAN_EXCLUSIVE(flags) (((flags) & 2ull) != 0)

// Sums and products in the reductions' accumulator: floats in their compute type, integers wrapping in i64.
template <bool PROD, typename T>
__device__ void scan_ring(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x, T *out,
                          unsigned long long flags) {
    typedef typename RAcc<T>::type A;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *src = x + strided_index(oi, lane);
        T *dst = out + strided_index(oo, lane);
        A acc = PROD ? 1 : 0;
        for (size_t k = 0; k < len; ++k) {
            const size_t i = SCAN_REVERSE(flags) ? len - 1 - k : k;
            const A v = to_racc(src[i * xs]);
            const A before = acc;
            acc = PROD ? acc_mul(acc, v) : acc_add(acc, v);
            dst[i * os] = from_racc<T>(SCAN_EXCLUSIVE(flags) ? before : acc);
        }
    }
}

template <bool MIN, typename T>
__device__ void scan_extreme(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x,
                             T *out, unsigned long long flags) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *src = x + strided_index(oi, lane);
        T *dst = out + strided_index(oo, lane);
        A acc = 0;
        for (size_t k = 0; k < len; ++k) {
            const size_t i = SCAN_REVERSE(flags) ? len - 1 - k : k;
            const A v = up(src[i * xs]);
            // The later element wins a tie (PyTorch's `x >= max`: the value at the index scan_index gives, so a
            // 0.0 / -0.0 tie takes the later zero's sign); a NaN sticks. Always inclusive, as on the host.
            acc = k == 0 ? v : (MIN ? m_min(v, acc) : m_max(v, acc));
            dst[i * os] = down<T>(acc);
        }
    }
}

// Log-sum-exp of each prefix: the reductions' state and merge (accumulate.cuh), one element at a time.
template <typename T>
__device__ void scan_log_sum_exp(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x,
                                 T *out, unsigned long long flags) {
    typedef typename RAcc<T>::type A;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *src = x + strided_index(oi, lane);
        T *dst = out + strided_index(oo, lane);
        LseState<A> state = lse_empty<A>();
        for (size_t k = 0; k < len; ++k) {
            const size_t i = SCAN_REVERSE(flags) ? len - 1 - k : k;
            const LseState<A> before = state;
            state = lse_merge(state, lse_of(to_racc(src[i * xs])));
            dst[i * os] = from_racc<T>(lse_finish(SCAN_EXCLUSIVE(flags) ? before : state));
        }
    }
}

// The index of each running maximum (minimum): ties to the later element, a NaN wins from where it occurs.
template <bool MIN, typename T>
__device__ void scan_index(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x,
                           u32 *out) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *src = x + strided_index(oi, lane);
        u32 *dst = out + strided_index(oo, lane);
        A best = 0;
        size_t at = 0;
        for (size_t i = 0; i < len; ++i) {
            const A v = up(src[i * xs]);
            if (i == 0 || m_isnan(v) || (!m_isnan(best) && (MIN ? v <= best : v >= best))) {
                best = v;
                at = i;
            }
            dst[i * os] = (u32)at;
        }
    }
}

// cumprod's gradient: R_i = g_i + x_{i+1} R_{i+1} from the end (kept in the output, rounded to T as on the host),
// then dx_i = P_i R_i with P the running product of the elements before i.
template <typename T>
__device__ void cumprod_backward(size_t lanes, size_t len, Layout ox, Layout og, Layout oo, size_t xs, size_t gs,
                                 size_t os, const T *x, const T *g, T *out, unsigned long long exclusive) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *xl = x + strided_index(ox, lane);
        const T *gl = g + strided_index(og, lane);
        T *dst = out + strided_index(oo, lane);
        A r = 0;
        for (size_t i = len; i-- > 0;) {
            // The exclusive product's output i + 1 is the inclusive one's i: its gradient stands in, 0 past the end.
            const A gi = !exclusive ? up(gl[i * gs]) : i + 1 < len ? up(gl[(i + 1) * gs]) : A(0);
            r = i + 1 == len ? gi : gi + up(xl[(i + 1) * xs]) * r;
            const T rounded = down<T>(r);
            dst[i * os] = rounded;
            r = up(rounded);
        }
        A p = 1;
        for (size_t i = 0; i < len; ++i) {
            dst[i * os] = down<T>(p * up(dst[i * os]));
            p = p * up(xl[i * xs]);
        }
    }
}

#define SCAN_PARAMS(T) size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x
#define SCAN_ARGS lanes, len, oi, oo, xs, os, x
#define SCAN_KERNELS(T, _)                                                                                         \
    extern "C" __global__ void scan_cumsum_##T(SCAN_PARAMS(T), T *out, unsigned long long flags) {                   \
        scan_ring<false, T>(SCAN_ARGS, out, flags);                                                              \
    }                                                                                                              \
    extern "C" __global__ void scan_cumprod_##T(SCAN_PARAMS(T), T *out, unsigned long long flags) {                  \
        scan_ring<true, T>(SCAN_ARGS, out, flags);                                                               \
    }                                                                                                              \
    extern "C" __global__ void scan_cummax_##T(SCAN_PARAMS(T), T *out, unsigned long long flags) {                   \
        scan_extreme<false, T>(SCAN_ARGS, out, flags);                                                           \
    }                                                                                                              \
    extern "C" __global__ void scan_cummin_##T(SCAN_PARAMS(T), T *out, unsigned long long flags) {                   \
        scan_extreme<true, T>(SCAN_ARGS, out, flags);                                                            \
    }                                                                                                              \
    extern "C" __global__ void scan_index_cummax_##T(SCAN_PARAMS(T), u32 *out) {                                     \
        scan_index<false, T>(SCAN_ARGS, out);                                                                      \
    }                                                                                                              \
    extern "C" __global__ void scan_index_cummin_##T(SCAN_PARAMS(T), u32 *out) { scan_index<true, T>(SCAN_ARGS, out); }
FOR_ALL_DTYPES(SCAN_KERNELS, _)

#define FLOAT_SCAN_KERNELS(T, _)                                                                                   \
    extern "C" __global__ void scan_logcumsumexp_##T(SCAN_PARAMS(T), T *out, unsigned long long flags) {             \
        scan_log_sum_exp<T>(SCAN_ARGS, out, flags);                                                              \
    }                                                                                                              \
    extern "C" __global__ void cumprod_backward_##T(size_t lanes, size_t len, Layout ox, Layout og, Layout oo,    \
                                                    size_t xs, size_t gs, size_t os, const T *x, const T *g,       \
                                                    T *out, unsigned long long exclusive) {                        \
        cumprod_backward<T>(lanes, len, ox, og, oo, xs, gs, os, x, g, out, exclusive);                             \
    }
FOR_FLOAT_DTYPES(FLOAT_SCAN_KERNELS, _)
