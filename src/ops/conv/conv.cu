// Convolution helpers over NCHW views (src/ops/conv/host.rs has the semantics; pooling is src/ops/pool/pool.cu).
//
//   im2col_{T}(n, g, lx, x, col)                       col: dense [N, C_in * KH * KW, OH * OW] (then matmul; unfold)
//   fold_{T}(n, g, lc, col, out)                        col2im: out dense (N, C_in, H, W), each pixel its taps' sum
//   conv_transpose2d_{T}(n, g, lx, lw, x, w, out)      direct: out (N, C_out, OH, OW), w (C_in, C_out / groups, KH, KW)
//
// `g` holds the geometry; `n` is the number of output elements; x and w are read through their layouts.
#include "geom.cuh"

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
    }
FOR_FLOAT_DTYPES(CONV_KERNELS, _)
