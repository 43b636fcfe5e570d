// Shared by every kernel module: dtypes, the strided layout passed by value, conversions and math helpers.
//
// Naming rule (shared with src/ops/mod.rs `kernel_name`): every kernel is `{stem}_{dtype}`, e.g. `exp_f32`;
// casts are `cast_{from}_{to}`. The FOR_* macros below instantiate each family for its dtypes, and the Rust
// side (src/device/cuda/kernels.rs) lists the same families; tests/cuda_ptx.rs checks that they agree.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

typedef __half f16;
typedef __nv_bfloat16 bf16;
typedef uint8_t u8;
typedef int8_t i8;
typedef uint32_t u32;
typedef int32_t i32;
typedef int64_t i64;
typedef float f32;
typedef double f64;

#define MAX_RANK 6

// Mirrors `KernelLayout` in src/device/cuda/kernels.rs: 104 bytes, 8-byte aligned. The offset is folded into
// the pointer by the host.
struct Layout {
    unsigned long long dims[MAX_RANK];
    unsigned long long strides[MAX_RANK];
    unsigned int rank;
    unsigned int contiguous;
};

// Storage index of the i-th element (row-major) of a view. The loop is unrolled over MAX_RANK so every field
// access has a constant index: a dynamically indexed kernel parameter makes nvcc copy the whole struct to local
// memory in every thread (208 bytes per binary kernel thread, which cut elementwise bandwidth to ~5%).
__device__ __forceinline__ size_t strided_index(const Layout &l, size_t i) {
    if (l.contiguous) return i;
    size_t off = 0;
#pragma unroll
    for (int d = MAX_RANK - 1; d >= 0; --d) {
        if (d < (int)l.rank) {
            const size_t dim = l.dims[d];
            off += (i % dim) * l.strides[d];
            i /= dim;
        }
    }
    return off;
}

#define GRID_STRIDE_LOOP(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)blockDim.x * gridDim.x)

// Elements per thread of the elementwise kernels: the host launches ceil(n / (256 * ELEMS_PER_THREAD)) blocks.
#define ELEMS_PER_THREAD 4

// The elementwise loop: `store(i, value(i, dense))` for every i < n. When every input is dense, a thread takes
// ELEMS_PER_THREAD elements a grid apart and computes all of them before storing any, so their loads are in flight
// together (one load at a time per thread left a one-input op like exp at 75% of copy bandwidth on an H100).
template <typename Value, typename Store>
__device__ __forceinline__ void elementwise(size_t n, bool dense, Value value, Store store) {
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (dense) {
        for (; i + 3 * stride < n; i += 4 * stride) {
            const auto v0 = value(i, true), v1 = value(i + stride, true), v2 = value(i + 2 * stride, true),
                       v3 = value(i + 3 * stride, true);
            store(i, v0);
            store(i + stride, v1);
            store(i + 2 * stride, v2);
            store(i + 3 * stride, v3);
        }
    }
    for (; i < n; i += stride) store(i, value(i, dense));
}

// ---- Compute type: f16/bf16/f32 compute in float, f64 in double, integers in themselves. --------------------
template <typename T> struct Acc { typedef T type; };
template <> struct Acc<f16> { typedef float type; };
template <> struct Acc<bf16> { typedef float type; };

template <typename T> __device__ __forceinline__ typename Acc<T>::type up(T x) { return x; }
template <> __device__ __forceinline__ float up<f16>(f16 x) { return __half2float(x); }
template <> __device__ __forceinline__ float up<bf16>(bf16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T down(typename Acc<T>::type x) { return x; }
template <> __device__ __forceinline__ f16 down<f16>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ bf16 down<bf16>(float x) { return __float2bfloat16_rn(x); }

template <typename T> struct IsInt { static const bool value = false; };
template <> struct IsInt<u8> { static const bool value = true; };
template <> struct IsInt<i8> { static const bool value = true; };
template <> struct IsInt<u32> { static const bool value = true; };
template <> struct IsInt<i32> { static const bool value = true; };
template <> struct IsInt<i64> { static const bool value = true; };

// ---- Math overloads on the compute types. --------------------------------------------------------------------
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_erfc(float x) { return erfcf(x); }
__device__ __forceinline__ double m_erfc(double x) { return erfc(x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return erf(x); }
__device__ __forceinline__ float m_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double m_expm1(double x) { return expm1(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log1p(double x) { return log1p(x); }
// One overload pair per libm function the math ops use (float for f16/bf16/f32, double for f64).
#define M_FN(NAME, F, D) \
    __device__ __forceinline__ float NAME(float x) { return F(x); } \
    __device__ __forceinline__ double NAME(double x) { return D(x); }
M_FN(m_floor, floorf, floor)
M_FN(m_ceil, ceilf, ceil)
M_FN(m_rint, rintf, rint)
M_FN(m_trunc, truncf, trunc)
M_FN(m_log2, log2f, log2)
M_FN(m_log10, log10f, log10)
M_FN(m_exp2, exp2f, exp2)
M_FN(m_tan, tanf, tan)
M_FN(m_asin, asinf, asin)
M_FN(m_acos, acosf, acos)
M_FN(m_atan, atanf, atan)
M_FN(m_sinh, sinhf, sinh)
M_FN(m_cosh, coshf, cosh)
M_FN(m_asinh, asinhf, asinh)
M_FN(m_acosh, acoshf, acosh)
M_FN(m_atanh, atanhf, atanh)
#undef M_FN
__device__ __forceinline__ float m_atan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double m_atan2(double a, double b) { return atan2(a, b); }
__device__ __forceinline__ float m_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double m_fmod(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float m_pow(float x, float e) { return powf(x, e); }
__device__ __forceinline__ double m_pow(double x, double e) { return pow(x, e); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ i64 m_abs(i64 x) { return x < 0 ? (i64)(0ull - (unsigned long long)x) : x; }
__device__ __forceinline__ i32 m_abs(i32 x) { return x < 0 ? (i32)(0u - (unsigned int)x) : x; }
__device__ __forceinline__ i8 m_abs(i8 x) { return x < 0 ? (i8)(0u - (unsigned int)x) : x; }

// Wrapping integer arithmetic goes through unsigned 64-bit; this converts back. Float types never take that
// branch, but every branch of a template must compile, hence the half specialisations.
template <typename T> __device__ __forceinline__ T from_bits_u64(unsigned long long v) { return (T)v; }
template <> __device__ __forceinline__ f16 from_bits_u64<f16>(unsigned long long) { return __float2half_rn(0.f); }
template <> __device__ __forceinline__ bf16 from_bits_u64<bf16>(unsigned long long) {
    return __float2bfloat16_rn(0.f);
}
template <typename T> __device__ __forceinline__ unsigned long long bits_u64(T x) { return (unsigned long long)x; }
template <> __device__ __forceinline__ unsigned long long bits_u64<f16>(f16) { return 0; }
template <> __device__ __forceinline__ unsigned long long bits_u64<bf16>(bf16) { return 0; }
template <> __device__ __forceinline__ unsigned long long bits_u64<f32>(f32) { return 0; }
template <> __device__ __forceinline__ unsigned long long bits_u64<f64>(f64) { return 0; }

template <typename A> __device__ __forceinline__ bool m_isnan(A x) { return x != x; }

// NaN-propagating max/min, matching `WithDType::max_of` / `min_of`.
template <typename A> __device__ __forceinline__ A m_max(A a, A b) {
    if (m_isnan(a) || m_isnan(b)) return m_isnan(a) ? a : b;
    return a >= b ? a : b;
}
template <typename A> __device__ __forceinline__ A m_min(A a, A b) {
    if (m_isnan(a) || m_isnan(b)) return m_isnan(a) ? a : b;
    return a <= b ? a : b;
}

// ---- Dtype lists for instantiation. --------------------------------------------------------------------------
#define FOR_ALL_DTYPES(M, ...) \
    M(u8, __VA_ARGS__) M(i8, __VA_ARGS__) M(u32, __VA_ARGS__) M(i32, __VA_ARGS__) M(i64, __VA_ARGS__) \
    M(f16, __VA_ARGS__) M(bf16, __VA_ARGS__) M(f32, __VA_ARGS__) M(f64, __VA_ARGS__)
#define FOR_SIGNED_DTYPES(M, ...) \
    M(i8, __VA_ARGS__) M(i32, __VA_ARGS__) M(i64, __VA_ARGS__) M(f16, __VA_ARGS__) M(bf16, __VA_ARGS__) \
    M(f32, __VA_ARGS__) M(f64, __VA_ARGS__)
#define FOR_INT_DTYPES(M, ...) \
    M(u8, __VA_ARGS__) M(i8, __VA_ARGS__) M(u32, __VA_ARGS__) M(i32, __VA_ARGS__) M(i64, __VA_ARGS__)
#define FOR_FLOAT_DTYPES(M, ...) M(f16, __VA_ARGS__) M(bf16, __VA_ARGS__) M(f32, __VA_ARGS__) M(f64, __VA_ARGS__)
