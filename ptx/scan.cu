// Scans along one axis (cumsum, cumprod, cummax/cummin with their indices, logcumsumexp) and cumprod's gradient,
// with the recurrences of the host devices (src/ops/scan/mod.rs `Scan::run`, src/ops/scan/host.rs): a thread per
// lane walks it in order, so integer results and maxima are the host's bits and float sums agree to rounding.
//
//   scan_{op}_{T}(lanes, len, outer_in, outer_out, in_stride, out_stride, x, out, reverse)
//   scan_index_{op}_{T}(lanes, len, outer_in, outer_out, in_stride, out_stride, x, out_u32)
//   cumprod_backward_{T}(lanes, len, outer_x, outer_g, outer_out, x_stride, g_stride, out_stride, x, g, out)
//
// `outer_*` walk the lanes' first elements (in the input views and the dense output); a lane's elements are
// `*_stride` apart.
#include "common.cuh"

// Sums and products: floats in their compute type, integers wrapping in 64 bits (as the host's i64 accumulator).
template <typename T, bool INT = IsInt<T>::value> struct Ring {
    typedef typename Acc<T>::type S;
    __device__ static S load(T x) { return up(x); }
    __device__ static T store(S s) { return down<T>(s); }
};
template <typename T> struct Ring<T, true> {
    typedef unsigned long long S;
    __device__ static S load(T x) { return bits_u64(x); }
    __device__ static T store(S s) { return from_bits_u64<T>(s); }
};

template <bool PROD, typename T>
__device__ void scan_ring(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x, T *out,
                          unsigned long long reverse) {
    typedef Ring<T> R;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *src = x + strided_index(oi, lane);
        T *dst = out + strided_index(oo, lane);
        typename R::S acc = PROD ? 1 : 0;
        for (size_t k = 0; k < len; ++k) {
            const size_t i = reverse ? len - 1 - k : k;
            const typename R::S v = R::load(src[i * xs]);
            acc = PROD ? acc * v : acc + v;
            dst[i * os] = R::store(acc);
        }
    }
}

template <bool MIN, typename T>
__device__ void scan_extreme(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x,
                             T *out, unsigned long long reverse) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *src = x + strided_index(oi, lane);
        T *dst = out + strided_index(oo, lane);
        A acc = 0;
        for (size_t k = 0; k < len; ++k) {
            const size_t i = reverse ? len - 1 - k : k;
            const A v = up(src[i * xs]);
            acc = k == 0 ? v : (MIN ? m_min(acc, v) : m_max(acc, v));
            dst[i * os] = down<T>(acc);
        }
    }
}

// The log-sum-exp state (m, s): the running maximum and the sum of exp(x - m), folded as on the host.
template <typename T>
__device__ void scan_log_sum_exp(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x,
                                 T *out, unsigned long long reverse) {
    typedef typename Acc<T>::type A;
    const A inf = (A)1 / (A)0;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *src = x + strided_index(oi, lane);
        T *dst = out + strided_index(oo, lane);
        A m = -inf, s = 0;
        for (size_t k = 0; k < len; ++k) {
            const size_t i = reverse ? len - 1 - k : k;
            const A v = up(src[i * xs]);
            if (m_isnan(m) || m_isnan(v)) {
                m = v + m;
                s = 1;
            } else if (v == -inf) {
            } else if (m == -inf || v == m) {
                s = m == -inf ? (A)1 : s + (A)1;
                m = v;
            } else if (v > m) {
                s = (A)1 + s * m_exp(m - v);
                m = v;
            } else {
                s = s + m_exp(v - m);
            }
            const A y = (m == -inf || m == inf || m_isnan(m)) ? m : m + m_log(s);
            dst[i * os] = down<T>(y);
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
                                 size_t os, const T *x, const T *g, T *out) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *xl = x + strided_index(ox, lane);
        const T *gl = g + strided_index(og, lane);
        T *dst = out + strided_index(oo, lane);
        A r = 0;
        for (size_t i = len; i-- > 0;) {
            const A gi = up(gl[i * gs]);
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
    extern "C" __global__ void scan_cumsum_##T(SCAN_PARAMS(T), T *out, unsigned long long reverse) {                 \
        scan_ring<false, T>(SCAN_ARGS, out, reverse);                                                              \
    }                                                                                                              \
    extern "C" __global__ void scan_cumprod_##T(SCAN_PARAMS(T), T *out, unsigned long long reverse) {                \
        scan_ring<true, T>(SCAN_ARGS, out, reverse);                                                               \
    }                                                                                                              \
    extern "C" __global__ void scan_cummax_##T(SCAN_PARAMS(T), T *out, unsigned long long reverse) {                 \
        scan_extreme<false, T>(SCAN_ARGS, out, reverse);                                                           \
    }                                                                                                              \
    extern "C" __global__ void scan_cummin_##T(SCAN_PARAMS(T), T *out, unsigned long long reverse) {                 \
        scan_extreme<true, T>(SCAN_ARGS, out, reverse);                                                            \
    }                                                                                                              \
    extern "C" __global__ void scan_index_cummax_##T(SCAN_PARAMS(T), u32 *out) {                                     \
        scan_index<false, T>(SCAN_ARGS, out);                                                                      \
    }                                                                                                              \
    extern "C" __global__ void scan_index_cummin_##T(SCAN_PARAMS(T), u32 *out) { scan_index<true, T>(SCAN_ARGS, out); }
FOR_ALL_DTYPES(SCAN_KERNELS, _)

#define FLOAT_SCAN_KERNELS(T, _)                                                                                   \
    extern "C" __global__ void scan_logcumsumexp_##T(SCAN_PARAMS(T), T *out, unsigned long long reverse) {           \
        scan_log_sum_exp<T>(SCAN_ARGS, out, reverse);                                                              \
    }                                                                                                              \
    extern "C" __global__ void cumprod_backward_##T(size_t lanes, size_t len, Layout ox, Layout og, Layout oo,    \
                                                    size_t xs, size_t gs, size_t os, const T *x, const T *g,       \
                                                    T *out) {                                                      \
        cumprod_backward<T>(lanes, len, ox, og, oo, xs, gs, os, x, g, out);                                        \
    }
FOR_FLOAT_DTYPES(FLOAT_SCAN_KERNELS, _)
