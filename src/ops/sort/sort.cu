// The stable order of every lane along one axis (src/ops/sort): a thread per lane runs a bottom-up merge sort of
// the lane's positions, ping-ponging between the output and a scratch buffer of the same layout, with the host's
// comparison (src/ops/sort/mod.rs `before`: ascending with NaN last, descending with NaN first, ties in input
// order). So the result is the host's, position for position.
//
//   argsort_{T}(lanes, len, outer_in, outer_out, in_stride, out_stride, x, out, scratch, descending)
#include "common.cuh"

template <typename A> __device__ __forceinline__ bool less_nan_last(A a, A b) {
    return !m_isnan(a) && (m_isnan(b) || a < b);
}

template <typename T>
__device__ void argsort_body(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os, const T *x,
                             u32 *out, u32 *scratch, unsigned long long descending) {
    GRID_STRIDE_LOOP(lane, lanes) {
        const T *src = x + strided_index(oi, lane);
        const size_t o = strided_index(oo, lane);
        u32 *a = out + o, *b = scratch + o;
        for (size_t i = 0; i < len; ++i) a[i * os] = (u32)i;
        // `to` takes from the right run only when its element sorts strictly before: equal elements keep their
        // order.
        auto before = [&](u32 p, u32 q) {
            const auto vp = up(src[p * xs]), vq = up(src[q * xs]);
            return descending ? less_nan_last(vq, vp) : less_nan_last(vp, vq);
        };
        bool in_a = true;
        for (size_t w = 1; w < len; w *= 2) {
            const u32 *from = in_a ? a : b;
            u32 *to = in_a ? b : a;
            for (size_t lo = 0; lo < len; lo += 2 * w) {
                const size_t mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
                size_t i = lo, j = mid, k = lo;
                while (i < mid && j < hi) {
                    const u32 pi = from[i * os], pj = from[j * os];
                    if (before(pj, pi)) {
                        to[k * os] = pj;
                        ++j;
                    } else {
                        to[k * os] = pi;
                        ++i;
                    }
                    ++k;
                }
                while (i < mid) to[k++ * os] = from[i++ * os];
                while (j < hi) to[k++ * os] = from[j++ * os];
            }
            in_a = !in_a;
        }
        if (!in_a)
            for (size_t i = 0; i < len; ++i) a[i * os] = b[i * os];
    }
}

#define ARGSORT_KERNEL(T, _)                                                                                       \
    extern "C" __global__ void argsort_##T(size_t lanes, size_t len, Layout oi, Layout oo, size_t xs, size_t os,  \
                                           const T *x, u32 *out, u32 *scratch, unsigned long long descending) {    \
        argsort_body<T>(lanes, len, oi, oo, xs, os, x, out, scratch, descending);                                  \
    }
FOR_ALL_DTYPES(ARGSORT_KERNEL, _)
