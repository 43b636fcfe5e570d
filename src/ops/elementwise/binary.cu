// Binary elementwise ops, comparisons and where, over operands already broadcast to the output dims (stride 0 on
// repeated axes). `{op}_{T}(n, la, lb, a, b, out)`; `where_{T}(n, lm, lt, lf, m, t, f, out)`.
#include "common.cuh"

template <typename T> __device__ __forceinline__ T op_add(T a, T b) {
    if (IsInt<T>::value) return from_bits_u64<T>(bits_u64(a) + bits_u64(b));
    return down<T>(up(a) + up(b));
}
template <typename T> __device__ __forceinline__ T op_sub(T a, T b) {
    if (IsInt<T>::value) return from_bits_u64<T>(bits_u64(a) - bits_u64(b));
    return down<T>(up(a) - up(b));
}
template <typename T> __device__ __forceinline__ T op_mul(T a, T b) {
    if (IsInt<T>::value) return from_bits_u64<T>(bits_u64(a) * bits_u64(b));
    return down<T>(up(a) * up(b));
}
// Integer division truncates; by zero gives 0 and MIN / -1 wraps (to MIN), as on the CPU.
template <typename T> __device__ __forceinline__ T op_div(T a, T b) { return down<T>(up(a) / up(b)); }
template <> __device__ __forceinline__ u8 op_div<u8>(u8 a, u8 b) { return b == 0 ? 0 : a / b; }
template <> __device__ __forceinline__ u32 op_div<u32>(u32 a, u32 b) { return b == 0 ? 0 : a / b; }
template <typename T> __device__ __forceinline__ T signed_int_div(T a, T b) {
    if (b == 0) return 0;
    if (b == -1) return from_bits_u64<T>(0ull - bits_u64(a));
    return a / b;
}
template <> __device__ __forceinline__ i8 op_div<i8>(i8 a, i8 b) { return signed_int_div(a, b); }
template <> __device__ __forceinline__ i32 op_div<i32>(i32 a, i32 b) { return signed_int_div(a, b); }
template <> __device__ __forceinline__ i64 op_div<i64>(i64 a, i64 b) { return signed_int_div(a, b); }
template <typename T> __device__ __forceinline__ T op_maximum(T a, T b) { return down<T>(m_max(up(a), up(b))); }
template <typename T> __device__ __forceinline__ T op_minimum(T a, T b) { return down<T>(m_min(up(a), up(b))); }

#define BINARY_KERNEL(T, NAME) \
    extern "C" __global__ void NAME##_##T(size_t n, Layout la, Layout lb, const T *a, const T *b, T *out) { \
        elementwise(n, la.contiguous && lb.contiguous, \
                    [&](size_t i, bool dense) { \
                        return op_##NAME<T>(a[dense ? i : strided_index(la, i)], b[dense ? i : strided_index(lb, i)]); \
                    }, \
                    [&](size_t i, T v) { out[i] = v; }); \
    }
FOR_ALL_DTYPES(BINARY_KERNEL, add)
FOR_ALL_DTYPES(BINARY_KERNEL, sub)
FOR_ALL_DTYPES(BINARY_KERNEL, mul)
FOR_ALL_DTYPES(BINARY_KERNEL, div)
FOR_ALL_DTYPES(BINARY_KERNEL, maximum)
FOR_ALL_DTYPES(BINARY_KERNEL, minimum)

// Float-only (src/ops/elementwise/mod.rs, `float_binary_ops!`), in the accumulator type.
template <typename T> __device__ __forceinline__ T op_atan2(T a, T b) { return down<T>(m_atan2(up(a), up(b))); }
template <typename T> __device__ __forceinline__ T op_pow(T a, T b) { return down<T>(m_pow(up(a), up(b))); }
template <typename T> __device__ __forceinline__ T op_fmod(T a, T b) { return down<T>(m_fmod(up(a), up(b))); }
template <typename T> __device__ __forceinline__ T op_remainder(T a, T b) {
    typedef typename Acc<T>::type A;
    const A x = up(a), y = up(b), r = m_fmod(x, y);
    return down<T>(r != (A)0 && ((r < (A)0) != (y < (A)0)) ? r + y : r);
}
FOR_FLOAT_DTYPES(BINARY_KERNEL, atan2)
FOR_FLOAT_DTYPES(BINARY_KERNEL, pow)
FOR_FLOAT_DTYPES(BINARY_KERNEL, fmod)
FOR_FLOAT_DTYPES(BINARY_KERNEL, remainder)
// ReLU's gradient: `b` (the output's gradient) where the input `a` is positive, else 0 (NaN input: 0).
template <typename T> __device__ __forceinline__ T op_relu_backward(T a, T b) {
    return up(a) > (typename Acc<T>::type)0 ? b : down<T>(0);
}
FOR_FLOAT_DTYPES(BINARY_KERNEL, relu_backward)

// Integer-only (src/ops/elementwise/mod.rs, `int_binary_ops!`), with the host's shift rules: a negative amount or
// one of at least the bit width shifts everything out (0 to the left, the sign fill to the right).
template <typename T> struct IsSigned { static const bool value = false; };
template <> struct IsSigned<i8> { static const bool value = true; };
template <> struct IsSigned<i32> { static const bool value = true; };
template <> struct IsSigned<i64> { static const bool value = true; };
template <typename T> __device__ __forceinline__ T op_bitwise_and(T a, T b) { return a & b; }
template <typename T> __device__ __forceinline__ T op_bitwise_or(T a, T b) { return a | b; }
template <typename T> __device__ __forceinline__ T op_bitwise_xor(T a, T b) { return a ^ b; }
template <typename T> __device__ __forceinline__ T op_bitwise_left_shift(T a, T b) {
    const unsigned long long n = (unsigned long long)b;
    return n >= 8 * sizeof(T) ? (T)0 : (T)((unsigned long long)a << n);
}
template <typename T> __device__ __forceinline__ T op_bitwise_right_shift(T a, T b) {
    const unsigned long long n = (unsigned long long)b;
    if (n >= 8 * sizeof(T)) return IsSigned<T>::value && a < (T)0 ? (T)-1 : (T)0;
    return (T)(a >> n);
}
FOR_INT_DTYPES(BINARY_KERNEL, bitwise_and)
FOR_INT_DTYPES(BINARY_KERNEL, bitwise_or)
FOR_INT_DTYPES(BINARY_KERNEL, bitwise_xor)
FOR_INT_DTYPES(BINARY_KERNEL, bitwise_left_shift)
FOR_INT_DTYPES(BINARY_KERNEL, bitwise_right_shift)

// Comparisons on the (exact) compute types: NaN compares unequal to everything.
#define CMP_KERNEL(T, NAME, OP) \
    extern "C" __global__ void NAME##_##T(size_t n, Layout la, Layout lb, const T *a, const T *b, u8 *out) { \
        elementwise(n, la.contiguous && lb.contiguous, \
                    [&](size_t i, bool dense) { \
                        return (u8)((up(a[dense ? i : strided_index(la, i)]) OP up(b[dense ? i : strided_index(lb, i)])) \
                                        ? 1 : 0); \
                    }, \
                    [&](size_t i, u8 v) { out[i] = v; }); \
    }
#define CMP_ALL(T, _) \
    CMP_KERNEL(T, eq, ==) CMP_KERNEL(T, ne, !=) CMP_KERNEL(T, lt, <) CMP_KERNEL(T, le, <=) \
    CMP_KERNEL(T, gt, >) CMP_KERNEL(T, ge, >=)
FOR_ALL_DTYPES(CMP_ALL, _)

#define WHERE_KERNEL(T, _) \
    extern "C" __global__ void where_##T(size_t n, Layout lm, Layout lt, Layout lf, const u8 *m, const T *t, \
                                         const T *f, T *out) { \
        elementwise(n, lm.contiguous && lt.contiguous && lf.contiguous, \
                    [&](size_t i, bool d) { \
                        return m[d ? i : strided_index(lm, i)] ? t[d ? i : strided_index(lt, i)] \
                                                               : f[d ? i : strided_index(lf, i)]; \
                    }, \
                    [&](size_t i, T v) { out[i] = v; }); \
    }
FOR_ALL_DTYPES(WHERE_KERNEL, _)
