// Unary elementwise ops: `{op}_{T}(n, layout, x, out, p0, p1)`, where p0/p1 are the op's scalar parameters
// (affine's mul/add, clamp's bounds, powf's exponent) already rounded to T, zero for the others.
// Semantics follow src/ops/mod.rs: integers wrap, f16/bf16 compute in f32.
#include "common.cuh"

#define UNARY_KERNEL(T, NAME) \
    extern "C" __global__ void NAME##_##T(size_t n, Layout l, const T *x, T *out, T p0, T p1) { \
        elementwise(n, l.contiguous, \
                    [&](size_t i, bool dense) { return op_##NAME<T>(x[dense ? i : strided_index(l, i)], p0, p1); }, \
                    [&](size_t i, T v) { out[i] = v; }); \
    }

// ---- every dtype -----------------------------------------------------------------------------------------------
template <typename T> __device__ __forceinline__ T op_sqr(T x, T, T) {
    if (IsInt<T>::value) return from_bits_u64<T>(bits_u64(x) * bits_u64(x));
    return down<T>(up(x) * up(x));
}
template <typename T> __device__ __forceinline__ T op_clamp(T x, T lo, T hi) {
    return down<T>(m_min(m_max(up(x), up(lo)), up(hi)));
}
FOR_ALL_DTYPES(UNARY_KERNEL, sqr)
FOR_ALL_DTYPES(UNARY_KERNEL, clamp)

// ---- signed dtypes ---------------------------------------------------------------------------------------------
template <typename T> __device__ __forceinline__ T op_neg(T x, T, T) {
    if (IsInt<T>::value) return from_bits_u64<T>(0ull - bits_u64(x));
    return down<T>(-up(x));
}
template <typename T> __device__ __forceinline__ T op_abs(T x, T, T) { return down<T>(m_abs(up(x))); }
FOR_SIGNED_DTYPES(UNARY_KERNEL, neg)
FOR_SIGNED_DTYPES(UNARY_KERNEL, abs)

// ---- float dtypes ----------------------------------------------------------------------------------------------
#define FLOAT_FN(NAME, EXPR) \
    template <typename T> __device__ __forceinline__ T op_##NAME(T xt, T p0t, T p1t) { \
        typedef typename Acc<T>::type A; \
        A x = up(xt), p0 = up(p0t), p1 = up(p1t); \
        (void)p0; (void)p1; \
        return down<T>(EXPR); \
    } \
    FOR_FLOAT_DTYPES(UNARY_KERNEL, NAME)

FLOAT_FN(exp, m_exp(x))
FLOAT_FN(ln, m_log(x))
FLOAT_FN(sqrt, m_sqrt(x))
FLOAT_FN(recip, (A)1 / x)
FLOAT_FN(sin, m_sin(x))
FLOAT_FN(cos, m_cos(x))
FLOAT_FN(tanh, m_tanh(x))
FLOAT_FN(sigmoid, (A)1 / ((A)1 + m_exp(-x)))
FLOAT_FN(relu, x < (A)0 ? (A)0 : x)
// x / (1 + e^(-2u)) == 0.5 x (1 + tanh(u)) without the latter's cancellation for x << 0 (as on the CPU).
FLOAT_FN(gelu_tanh, x / ((A)1 + m_exp((A)-2 * (A)0.7978845608028654 * (x + (A)0.044715 * x * x * x))))
// 0.5 x erfc(-x / sqrt 2) == 0.5 x (1 + erf(x / sqrt 2)) without the cancellation of 1 + erf for x << 0.
FLOAT_FN(gelu_erf, (A)0.5 * x * m_erfc(-x * (A)0.7071067811865476))
FLOAT_FN(silu, x / ((A)1 + m_exp(-x)))
// The activations of src/ops/elementwise/activations.rs, same formulas in the accumulator type. Comparisons are
// written so that NaN falls through to the branch that propagates it.
FLOAT_FN(erf, m_erf(x))
FLOAT_FN(erfc, m_erfc(x))
FLOAT_FN(softsign, x / ((A)1 + m_abs(x)))
FLOAT_FN(relu6, x < (A)0 ? (A)0 : (x > (A)6 ? (A)6 : x))
FLOAT_FN(hardsigmoid, x <= (A)-3 ? (A)0 : (x >= (A)3 ? (A)1 : (x + (A)3) / (A)6))
FLOAT_FN(hardswish, x <= (A)-3 ? (A)0 : (x >= (A)3 ? x : x * (x + (A)3) / (A)6))
FLOAT_FN(mish, x * m_tanh(x > (A)20 ? x : m_log1p(m_exp(x))))
FLOAT_FN(log_sigmoid, m_min(x, (A)0) - m_log1p(m_exp(-m_abs(x))))
FLOAT_FN(selu, (A)1.0507009873554805 * (x > (A)0 ? x : (A)1.6732632423543772 * m_expm1(x)))
FLOAT_FN(leaky_relu, x > (A)0 ? x : x * p0)
FLOAT_FN(elu, x > (A)0 ? x : p0 * m_expm1(x))
FLOAT_FN(celu, x > (A)0 ? x : p0 * m_expm1(x / p0))
FLOAT_FN(softplus, x * p0 > p1 ? x : m_log1p(m_exp(p0 * x)) / p0)
// Rounding and the rest of libm (src/ops/elementwise/mod.rs). rint rounds halves to even.
FLOAT_FN(floor, m_floor(x))
FLOAT_FN(ceil, m_ceil(x))
FLOAT_FN(round, m_rint(x))
FLOAT_FN(trunc, m_trunc(x))
FLOAT_FN(sign, x > (A)0 ? (A)1 : (x < (A)0 ? (A)-1 : x))
FLOAT_FN(log1p, m_log1p(x))
FLOAT_FN(expm1, m_expm1(x))
FLOAT_FN(log2, m_log2(x))
FLOAT_FN(log10, m_log10(x))
FLOAT_FN(exp2, m_exp2(x))
FLOAT_FN(rsqrt, (A)1 / m_sqrt(x))
FLOAT_FN(tan, m_tan(x))
FLOAT_FN(asin, m_asin(x))
FLOAT_FN(acos, m_acos(x))
FLOAT_FN(atan, m_atan(x))
FLOAT_FN(sinh, m_sinh(x))
FLOAT_FN(cosh, m_cosh(x))
FLOAT_FN(asinh, m_asinh(x))
FLOAT_FN(acosh, m_acosh(x))
FLOAT_FN(atanh, m_atanh(x))
FLOAT_FN(powf, m_pow(x, p0))
// Affine in double for every float type, like the CPU, so both devices round once from the same value.
FLOAT_FN(affine, (A)((double)x * (double)p0 + (double)p1))
