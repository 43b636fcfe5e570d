// Pooling over NCHW views (src/ops/pool/host.rs has the semantics):
//
//   max_pool2d_{T} / avg_pool2d_{T}(n, g, lx, x, out)  KH x KW windows; padding never wins / divisor per g.count_pad
//   max_pool2d_indices_{T}(n, g, lx, x, out)           out: u32 plane index (row * W + column) of each maximum
//   max_pool2d_backward_{T}(n, g, at, dy, dx)          at (u32 indices), dy dense (N, C, OH, OW); dx dense (N, C, H, W)
//
// `g` holds the geometry; `n` is the number of output elements; x is read through its layout.
#include "geom.cuh"

// The divisor factor of average window o along one axis (`PoolParams::avg_count` in src/ops/pool/mod.rs).
__device__ __forceinline__ size_t avg_count(size_t o, size_t stride, size_t k, size_t dil, size_t pad, size_t size,
                                            bool count_pad) {
    const size_t span = dil * (k - 1) + 1, start = o * stride; // padded coordinates
    if (count_pad) return min(start + span, size + 2 * pad) - start;
    const size_t end = min(start + span, size + pad), lo = max(start, pad);
    return end > lo ? end - lo : 0;
}

template <typename T, bool MAX>
__device__ __forceinline__ void pool_body(size_t n, const Geom &g, const Layout &lx, const T *x, T *out) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(i, n) {
        size_t r = i;
        const size_t ox = r % g.ow; r /= g.ow;
        const size_t oy = r % g.oh; r /= g.oh;
        const size_t c = r % g.c_in;
        const size_t b = r / g.c_in;
        A acc = MAX ? -(A)INFINITY : (A)0;
        for (size_t ki = 0; ki < g.kh; ++ki) {
            const long long iy = (long long)(oy * g.stride_h + ki * g.dil_h) - (long long)g.pad_h;
            if (iy < 0 || iy >= (long long)g.h) continue;
            for (size_t kj = 0; kj < g.kw; ++kj) {
                const long long ix = (long long)(ox * g.stride_w + kj * g.dil_w) - (long long)g.pad_w;
                if (ix < 0 || ix >= (long long)g.w) continue;
                const A v = up(x[at4(lx, b, c, (size_t)iy, (size_t)ix)]);
                acc = MAX ? m_max(acc, v) : acc + v;
            }
        }
        if (MAX) {
            out[i] = down<T>(acc);
        } else {
            const size_t ch = avg_count(oy, g.stride_h, g.kh, g.dil_h, g.pad_h, g.h, g.count_pad != 0);
            const size_t cw = avg_count(ox, g.stride_w, g.kw, g.dil_w, g.pad_w, g.w, g.count_pad != 0);
            out[i] = down<T>(acc / ((A)ch * (A)cw));
        }
    }
}

// The plane index of each window's maximum: the first NaN, else the first of equal values in (row, column) order.
template <typename T>
__device__ __forceinline__ void max_pool2d_indices_body(size_t n, const Geom &g, const Layout &lx, const T *x,
                                                        u32 *out) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(i, n) {
        size_t r = i;
        const size_t ox = r % g.ow; r /= g.ow;
        const size_t oy = r % g.oh; r /= g.oh;
        const size_t c = r % g.c_in;
        const size_t b = r / g.c_in;
        A best = 0;
        bool seen = false;
        u32 at = 0;
        for (size_t ki = 0; ki < g.kh; ++ki) {
            const long long iy = (long long)(oy * g.stride_h + ki * g.dil_h) - (long long)g.pad_h;
            if (iy < 0 || iy >= (long long)g.h) continue;
            for (size_t kj = 0; kj < g.kw; ++kj) {
                const long long ix = (long long)(ox * g.stride_w + kj * g.dil_w) - (long long)g.pad_w;
                if (ix < 0 || ix >= (long long)g.w) continue;
                const A v = up(x[at4(lx, b, c, (size_t)iy, (size_t)ix)]);
                if (!seen || (!m_isnan(best) && (v > best || m_isnan(v)))) {
                    best = v;
                    at = (u32)((size_t)iy * g.w + (size_t)ix);
                    seen = true;
                }
            }
        }
        out[i] = at;
    }
}

// Gather form of the max-pool gradient: each input position sums the gradients of the windows whose index (the
// first maximum, as max_pool2d_indices found it) names it, so no atomics are needed.
template <typename T>
__device__ __forceinline__ void max_pool2d_backward_body(size_t n, const Geom &g, const u32 *at, const T *dy,
                                                         T *dx) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(i, n) {
        size_t r = i;
        const size_t ix = r % g.w; r /= g.w;
        const size_t iy = r % g.h; r /= g.h;
        const size_t c = r % g.c_in;
        const size_t b = r / g.c_in;
        const u32 here = (u32)(iy * g.w + ix);
        const size_t plane = (b * g.c_in + c) * g.oh * g.ow;
        A acc = 0;
        for (size_t ki = 0; ki < g.kh; ++ki) {
            const long long ty = (long long)(iy + g.pad_h) - (long long)(ki * g.dil_h);
            if (ty < 0 || ty % (long long)g.stride_h != 0) continue;
            const size_t oy = (size_t)ty / g.stride_h;
            if (oy >= g.oh) continue;
            for (size_t kj = 0; kj < g.kw; ++kj) {
                const long long tx = (long long)(ix + g.pad_w) - (long long)(kj * g.dil_w);
                if (tx < 0 || tx % (long long)g.stride_w != 0) continue;
                const size_t ox = (size_t)tx / g.stride_w;
                if (ox >= g.ow) continue;
                const size_t k = plane + oy * g.ow + ox;
                if (at[k] == here) acc += up(dy[k]);
            }
        }
        dx[i] = down<T>(acc);
    }
}

#define POOL_KERNELS(T, _)                                                                                       \
    extern "C" __global__ void max_pool2d_##T(size_t n, Geom g, Layout lx, const T *x, T *out) {                 \
        pool_body<T, true>(n, g, lx, x, out);                                                                    \
    }                                                                                                            \
    extern "C" __global__ void avg_pool2d_##T(size_t n, Geom g, Layout lx, const T *x, T *out) {                 \
        pool_body<T, false>(n, g, lx, x, out);                                                                   \
    }                                                                                                            \
    extern "C" __global__ void max_pool2d_indices_##T(size_t n, Geom g, Layout lx, const T *x, u32 *out) {         \
        max_pool2d_indices_body<T>(n, g, lx, x, out);                                                            \
    }                                                                                                            \
    extern "C" __global__ void max_pool2d_backward_##T(size_t n, Geom g, const u32 *at, const T *dy, T *dx) {   \
        max_pool2d_backward_body<T>(n, g, at, dy, dx);                                                           \
    }
FOR_FLOAT_DTYPES(POOL_KERNELS, _)
