// Resampling along one axis (interpolate's modes and adaptive average pooling) and its adjoint, with the taps of
// the host devices (src/ops/resample/mod.rs `Resample::taps`) computed here with the same double operations in
// the same order (the `_rn` intrinsics keep nvcc from fusing them into FMAs, which round once where the host
// rounds twice), and the same sums (src/ops/resample/host.rs).
//
//   resample_{T}(n, lanes, x, out, inner, step, n_in, n_out, mode, align)
//       a thread per output element: `lanes` is the input's layout with the output's dims and stride 0 on the
//       axis (so it gives each output's lane), `step` the input's stride along the axis.
//   resample_backward_{T}(n_lanes, lanes, g, out, inner, step, n_in, n_out, mode, align)
//       a thread per lane: `lanes` is the gradient's layout with size 1 on the axis; the lane's n_in outputs
//       (dense, `inner` apart) are zeroed, then each output gradient's share is added into its taps, in order.
//
// mode: 0 nearest, 1 bilinear, 2 bicubic, 3 adaptive mean (`Resample::code`).
#include "common.cuh"

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }

struct Taps {
    size_t index[4];
    double weight[4];
    size_t count;
    bool bin;
    size_t start, end;
};

// PyTorch's area_pixel_compute_source_index (`source` in mod.rs).
__device__ __forceinline__ double source(size_t dst, size_t n_in, size_t n_out, bool align, bool cubic) {
    if (align) return n_out > 1 ? __ddiv_rn(__dmul_rn((double)dst, (double)(n_in - 1)), (double)(n_out - 1)) : 0.0;
    const double src = __dsub_rn(__ddiv_rn(__dmul_rn(__dadd_rn((double)dst, 0.5), (double)n_in), (double)n_out), 0.5);
    return cubic ? src : fmax(src, 0.0);
}

// Keys' kernel with a = -0.75 (`cubic_weights` in mod.rs): ((a + 2) x - (a + 3)) x x + 1 and
// ((a x - 5 a) x + 8 a) x - 4 a.
__device__ __forceinline__ double cubic_near(double x) {
    return __dadd_rn(__dmul_rn(__dmul_rn(__dsub_rn(__dmul_rn(1.25, x), 2.25), x), x), 1.0);
}
__device__ __forceinline__ double cubic_far(double x) {
    return __dsub_rn(__dmul_rn(__dadd_rn(__dmul_rn(__dsub_rn(__dmul_rn(-0.75, x), -3.75), x), -6.0), x), -3.0);
}

__device__ __forceinline__ Taps taps(size_t o, size_t n_in, size_t n_out, unsigned long long mode, bool align) {
    Taps t;
    t.bin = false;
    t.count = 0;
    t.start = t.end = 0;
    const size_t last = n_in - 1;
    if (mode == 3) {
        t.bin = true;
        t.start = o * n_in / n_out;
        t.end = ((o + 1) * n_in + n_out - 1) / n_out;
    } else if (mode == 0) {
        t.index[0] = min(o * n_in / n_out, last);
        t.weight[0] = 1.0;
        t.count = 1;
    } else if (mode == 1) {
        const double src = source(o, n_in, n_out, align, false);
        const size_t i0 = min((size_t)floor(src), last);
        const double f = __dsub_rn(src, (double)i0);
        t.index[0] = i0;
        t.index[1] = min(i0 + 1, last);
        t.weight[0] = __dsub_rn(1.0, f);
        t.weight[1] = f;
        t.count = 2;
    } else {
        const double src = source(o, n_in, n_out, align, true);
        const double base = floor(src);
        const double f = __dsub_rn(src, base);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const long long at = (long long)base - 1 + k;
            t.index[k] = at < 0 ? 0 : (at > (long long)last ? last : (size_t)at);
        }
        t.weight[0] = cubic_far(__dadd_rn(f, 1.0));
        t.weight[1] = cubic_near(f);
        t.weight[2] = cubic_near(__dsub_rn(1.0, f));
        t.weight[3] = cubic_far(__dsub_rn(2.0, f));
        t.count = 4;
    }
    return t;
}

template <typename T>
__device__ __forceinline__ void resample_body(size_t n, const Layout &lanes, const T *x, T *out, size_t inner,
                                              size_t step, size_t n_in, size_t n_out, unsigned long long mode,
                                              bool align) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(i, n) {
        const size_t o = (i / inner) % n_out;
        const T *lane = x + strided_index(lanes, i);
        const Taps t = taps(o, n_in, n_out, mode, align);
        A acc = 0;
        if (t.bin) {
            for (size_t k = t.start; k < t.end; ++k) acc = add_rn(acc, up(lane[k * step]));
            acc = acc / (A)(t.end - t.start);
        } else {
            // Unrolled over the four slots with constant indices: a runtime index would put `t` in local memory.
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (k < (int)t.count) acc = add_rn(acc, mul_rn((A)t.weight[k], up(lane[t.index[k] * step])));
        }
        out[i] = down<T>(acc);
    }
}

template <typename T>
__device__ __forceinline__ void resample_backward_body(size_t n_lanes, const Layout &lanes, const T *g, T *out,
                                                       size_t inner, size_t step, size_t n_in, size_t n_out,
                                                       unsigned long long mode, bool align) {
    typedef typename Acc<T>::type A;
    GRID_STRIDE_LOOP(l, n_lanes) {
        const T *lane = g + strided_index(lanes, l);
        T *dst = out + (l / inner) * n_in * inner + l % inner;
        for (size_t i = 0; i < n_in; ++i) dst[i * inner] = down<T>((A)0);
        for (size_t o = 0; o < n_out; ++o) {
            const Taps t = taps(o, n_in, n_out, mode, align);
            const A gv = up(lane[o * step]);
            if (t.bin) {
                const A v = gv / (A)(t.end - t.start);
                for (size_t k = t.start; k < t.end; ++k) dst[k * inner] = down<T>(add_rn(up(dst[k * inner]), v));
            } else {
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    if (k >= (int)t.count) break;
                    const A v = mul_rn((A)t.weight[k], gv);
                    T *d = dst + t.index[k] * inner;
                    *d = down<T>(add_rn(up(*d), v));
                }
            }
        }
    }
}

#define RESAMPLE_KERNELS(T, _)                                                                                   \
    extern "C" __global__ void resample_##T(size_t n, Layout lanes, const T *x, T *out, size_t inner,            \
                                            size_t step, size_t n_in, size_t n_out, unsigned long long mode,     \
                                            unsigned long long align) {                                          \
        resample_body<T>(n, lanes, x, out, inner, step, n_in, n_out, mode, align != 0);                          \
    }                                                                                                            \
    extern "C" __global__ void resample_backward_##T(size_t n, Layout lanes, const T *g, T *out, size_t inner,   \
                                                     size_t step, size_t n_in, size_t n_out,                     \
                                                     unsigned long long mode, unsigned long long align) {        \
        resample_backward_body<T>(n, lanes, g, out, inner, step, n_in, n_out, mode, align != 0);                 \
    }
FOR_FLOAT_DTYPES(RESAMPLE_KERNELS, _)
