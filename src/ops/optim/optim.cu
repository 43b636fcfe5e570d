// Fused optimizer steps: one pass over a parameter, its moments and its gradient (dense, one length), with the
// math of src/device/cpu/optim.rs in the accumulator type (float for f16/bf16/f32, double for f64).
//
//   adam_step_{T}(n, coefficients, w, m, v, g)
#include "common.cuh"

// Mirrors `AdamCoefficients` in src/device/cuda/kernels.rs (72 bytes).
struct AdamCoefficients {
    double lr_t, beta1, beta2, eps, l2, keep, one_minus_beta1, one_minus_beta2, inv_bc2;
};

template <typename T>
__device__ __forceinline__ void adam_body(size_t n, const AdamCoefficients &s, T *w, T *m, T *v, const T *g) {
    typedef typename Acc<T>::type A;
    const A lr_t = (A)s.lr_t, b1 = (A)s.beta1, b2 = (A)s.beta2, eps = (A)s.eps, l2 = (A)s.l2, keep = (A)s.keep;
    const A one_b1 = (A)s.one_minus_beta1, one_b2 = (A)s.one_minus_beta2, inv_bc2 = (A)s.inv_bc2;
    GRID_STRIDE_LOOP(i, n) {
        const A wa = up(w[i]);
        const A ga = up(g[i]) + l2 * wa;
        const A ma = b1 * up(m[i]) + one_b1 * ga;
        const A va = b2 * up(v[i]) + one_b2 * (ga * ga);
        const A denom = m_sqrt(va * inv_bc2) + eps;
        w[i] = down<T>(keep * wa - lr_t * ma / denom);
        m[i] = down<T>(ma);
        v[i] = down<T>(va);
    }
}

#define ADAM_KERNEL(T, _)                                                                                     \
    extern "C" __global__ void adam_step_##T(size_t n, AdamCoefficients s, T *w, T *m, T *v, const T *g) {  \
        adam_body<T>(n, s, w, m, v, g);                                                                      \
    }
FOR_FLOAT_DTYPES(ADAM_KERNEL, _)
