// Convolution helpers and pooling over NCHW views (src/device/cpu/conv.rs has the semantics).
//
//   im2col_{T}(n, g, lx, x, col)                       col: dense [N, C_in * KH * KW, OH * OW] (then matmul; unfold)
//   fold_{T}(n, g, lc, col, out)                        col2im: out dense (N, C_in, H, W), each pixel its taps' sum
//   conv_transpose2d_{T}(n, g, lx, lw, x, w, out)      direct: out (N, C_out, OH, OW), w (C_in, C_out / groups, KH, KW)
//   max_pool2d_{T} / avg_pool2d_{T}(n, g, lx, x, out)  KH x KW windows; padding never wins / divisor per g.count_pad
//   max_pool2d_indices_{T}(n, g, lx, x, out)           out: u32 plane index (row * W + column) of each maximum
//   max_pool2d_backward_{T}(n, g, at, dy, dx)          at (u32 indices), dy dense (N, C, OH, OW); dx dense (N, C, H, W)
//
// `g` holds the geometry; `n` is the number of output elements; x and w are read through their layouts.
#include "common.cuh"

// Mirrors `ConvGeom` in src/device/cuda/kernels.rs (136 bytes). h, w: input size; oh, ow: output size.
// count_pad: average pooling divides by the window clipped to the padded input (1) or to the input (0).
struct Geom {
    unsigned long long n, c_in, h, w, c_out, kh, kw, oh, ow;
    unsigned long long stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
    unsigned long long count_pad;
};

// The divisor factor of average window o along one axis (`PoolParams::avg_count` in src/ops/conv/mod.rs).
__device__ __forceinline__ size_t avg_count(size_t o, size_t stride, size_t k, size_t dil, size_t pad, size_t size,
                                            bool count_pad) {
    const size_t span = dil * (k - 1) + 1, start = o * stride; // padded coordinates
    if (count_pad) return min(start + span, size + 2 * pad) - start;
    const size_t end = min(start + span, size + pad), lo = max(start, pad);
    return end > lo ? end - lo : 0;
}

__device__ __forceinline__ size_t at4(const Layout &l, size_t a, size_t b, size_t c, size_t d) {
    return a * l.strides[0] + b * l.strides[1] + c * l.strides[2] + d * l.strides[3];
}

template <typename T>
__device__ __forceinline__ void im2col_body(size_t n, const Geom &g, const Layout &lx, const T *x, T *col) {
    GRID_STRIDE_LOOP(i, n) {
        size_t r = i;
        const size_t ox = r % g.ow; r /= g.ow;
        const size_t oy = r % g.oh; r /= g.oh;
        const size_t kj = r % g.kw; r /= g.kw;
        const size_t ki = r % g.kh; r /= g.kh;
        const size_t c = r % g.c_in;
        const size_t b = r / g.c_in;
        const long long iy = (long long)(oy * g.stride_h + ki * g.dil_h) - (long long)g.pad_h;
        const long long ix = (long long)(ox * g.stride_w + kj * g.dil_w) - (long long)g.pad_w;
        const bool inside = iy >= 0 && ix >= 0 && iy < (long long)g.h && ix < (long long)g.w;
        col[i] = inside ? x[at4(lx, b, c, (size_t)iy, (size_t)ix)] : T();
    }
}

template <typename T>
__device__ __forceinline__ void conv_transpose2d_body(size_t n, const Geom &g, const Layout &lx, const Layout &lw,
                                                      const T *x, const T *w, T *out) {
    typedef typename Acc<T>::type A;
    const size_t cog = g.c_out / g.groups, cig = g.c_in / g.groups;
    GRID_STRIDE_LOOP(i, n) {
        size_t r = i;
        const size_t ox = r % g.ow; r /= g.ow;
        const size_t oy = r % g.oh; r /= g.oh;
        const size_t co = r % g.c_out;
        const size_t b = r / g.c_out;
        const size_t grp = co / cog, col = co % cog;
        A acc = 0;
        for (size_t ki = 0; ki < g.kh; ++ki) {
            const long long ty = (long long)(oy + g.pad_h) - (long long)(ki * g.dil_h);
            if (ty < 0 || ty % (long long)g.stride_h != 0) continue;
            const size_t iy = (size_t)ty / g.stride_h;
            if (iy >= g.h) continue;
            for (size_t kj = 0; kj < g.kw; ++kj) {
                const long long tx = (long long)(ox + g.pad_w) - (long long)(kj * g.dil_w);
                if (tx < 0 || tx % (long long)g.stride_w != 0) continue;
                const size_t ix = (size_t)tx / g.stride_w;
                if (ix >= g.w) continue;
                for (size_t cl = 0; cl < cig; ++cl) {
                    const size_t ci = grp * cig + cl;
                    acc += up(x[at4(lx, b, ci, iy, ix)]) * up(w[at4(lw, ci, col, ki, kj)]);
                }
            }
        }
        out[i] = down<T>(acc);
    }
}

// fold (col2im) as a gather: each pixel sums the column values unfold reads from it, taps in (row, column) order,
// so a value reaches its own pixel only (a NaN stays there). The host adds the same values in the same order.
template <typename T>
__device__ __forceinline__ void fold_body(size_t n, const Geom &g, const Layout &lc, const T *col, T *out) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(i, n) {
        size_t r = i;
        const size_t x = r % g.w; r /= g.w;
        const size_t y = r % g.h; r /= g.h;
        const size_t c = r % g.c_in;
        const size_t b = r / g.c_in;
        A acc = 0;
        for (size_t ki = 0; ki < g.kh; ++ki) {
            const long long ty = (long long)(y + g.pad_h) - (long long)(ki * g.dil_h);
            if (ty < 0 || ty % (long long)g.stride_h != 0) continue;
            const size_t oy = (size_t)ty / g.stride_h;
            if (oy >= g.oh) continue;
            for (size_t kj = 0; kj < g.kw; ++kj) {
                const long long tx = (long long)(x + g.pad_w) - (long long)(kj * g.dil_w);
                if (tx < 0 || tx % (long long)g.stride_w != 0) continue;
                const size_t ox = (size_t)tx / g.stride_w;
                if (ox >= g.ow) continue;
                acc += up(col[at4(lc, b, (c * g.kh + ki) * g.kw + kj, oy, ox)]);
            }
        }
        out[i] = down<T>(acc);
    }
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

#define CONV_KERNELS(T, _)                                                                                       \
    extern "C" __global__ void im2col_##T(size_t n, Geom g, Layout lx, const T *x, T *col) {                     \
        im2col_body<T>(n, g, lx, x, col);                                                                        \
    }                                                                                                            \
    extern "C" __global__ void fold_##T(size_t n, Geom g, Layout lc, const T *col, T *out) {                     \
        fold_body<T>(n, g, lc, col, out);                                                                        \
    }                                                                                                            \
    extern "C" __global__ void conv_transpose2d_##T(size_t n, Geom g, Layout lx, Layout lw, const T *x,          \
                                                    const T *w, T *out) {                                        \
        conv_transpose2d_body<T>(n, g, lx, lw, x, w, out);                                                       \
    }                                                                                                            \
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
FOR_FLOAT_DTYPES(CONV_KERNELS, _)
