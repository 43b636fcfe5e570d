// Fill, strided copy (`contiguous`), and casts between every pair of dtypes.
#include "common.cuh"

// ---- fill_{T}(n, value, out) ----------------------------------------------------------------------------------
#define FILL(T, _) \
    extern "C" __global__ void fill_##T(size_t n, T value, T *out) { \
        GRID_STRIDE_LOOP(i, n) out[i] = value; \
    }
FOR_ALL_DTYPES(FILL, _)

// ---- copy_{T}(n, layout, x, out): gathers a strided view into dense output --------------------------------------
#define COPY(T, _) \
    extern "C" __global__ void copy_##T(size_t n, Layout l, const T *x, T *out) { \
        elementwise(n, l.contiguous, [&](size_t i, bool d) { return x[d ? i : strided_index(l, i)]; }, \
                    [&](size_t i, T v) { out[i] = v; }); \
    }
FOR_ALL_DTYPES(COPY, _)

// ---- casts, with the rules of src/dtype.rs: integers go through i64, floats through f64; into integers floats
// truncate and saturate (NaN -> 0) and integers wrap; into f16/bf16/f32 round to nearest even. --------------------

// Rounds a double to float with round-to-odd, so that a second rounding to f16/bf16 (>= 2 fewer mantissa bits)
// gives the correctly rounded result, as the `half` crate's direct f64 conversion does on the CPU.
__device__ __forceinline__ float round_to_odd_f32(double x) {
    float f = __double2float_rz(x);
    if ((double)f != x && !(x != x)) {
        unsigned int bits = __float_as_uint(f) | 1u;
        f = __uint_as_float(bits);
    }
    return f;
}

template <typename U> __device__ __forceinline__ U from_f64(double x);
template <> __device__ __forceinline__ f64 from_f64<f64>(double x) { return x; }
template <> __device__ __forceinline__ f32 from_f64<f32>(double x) { return (float)x; }
template <> __device__ __forceinline__ f16 from_f64<f16>(double x) { return __float2half_rn(round_to_odd_f32(x)); }
template <> __device__ __forceinline__ bf16 from_f64<bf16>(double x) {
    return __float2bfloat16_rn(round_to_odd_f32(x));
}
template <> __device__ __forceinline__ u8 from_f64<u8>(double x) {
    if (x != x || x <= 0.0) return 0;
    if (x >= 255.0) return 255;
    return (u8)x;
}
template <> __device__ __forceinline__ u32 from_f64<u32>(double x) {
    if (x != x || x <= 0.0) return 0;
    if (x >= 4294967295.0) return 4294967295u;
    return (u32)x;
}
template <> __device__ __forceinline__ i8 from_f64<i8>(double x) {
    if (x != x) return 0;
    if (x >= 127.0) return 127;
    if (x <= -128.0) return -128;
    return (i8)x;
}
template <> __device__ __forceinline__ i32 from_f64<i32>(double x) {
    if (x != x) return 0;
    if (x >= 2147483647.0) return INT32_MAX;
    if (x <= -2147483648.0) return INT32_MIN;
    return (i32)x;
}
template <> __device__ __forceinline__ i64 from_f64<i64>(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (i64)x;
}

template <typename U> __device__ __forceinline__ U from_i64(i64 x) {
    return (U)(unsigned long long)x;  // integers wrap (two's complement); floats are specialised below

}
// Integers wrap; the float specialisations reuse from_f64.
template <> __device__ __forceinline__ f64 from_i64<f64>(i64 x) { return (double)x; }
template <> __device__ __forceinline__ f32 from_i64<f32>(i64 x) { return (float)x; }
template <> __device__ __forceinline__ f16 from_i64<f16>(i64 x) { return from_f64<f16>((double)x); }
template <> __device__ __forceinline__ bf16 from_i64<bf16>(i64 x) { return from_f64<bf16>((double)x); }

template <typename T> __device__ __forceinline__ double to_f64(T x) { return (double)up(x); }
template <typename T> __device__ __forceinline__ i64 to_i64(T x) { return (i64)x; }
template <> __device__ __forceinline__ i64 to_i64<f16>(f16 x) { return 0; }   // never called: floats go via f64
template <> __device__ __forceinline__ i64 to_i64<bf16>(bf16 x) { return 0; }
template <> __device__ __forceinline__ i64 to_i64<f32>(f32 x) { return 0; }
template <> __device__ __forceinline__ i64 to_i64<f64>(f64 x) { return 0; }

template <typename T, typename U> __device__ __forceinline__ U cast_elem(T x) {
    if (IsInt<T>::value) return from_i64<U>(to_i64(x));
    return from_f64<U>(to_f64(x));
}

#define CAST(U, T) \
    extern "C" __global__ void cast_##T##_##U(size_t n, Layout l, const T *x, U *out) { \
        elementwise(n, l.contiguous, [&](size_t i, bool d) { return cast_elem<T, U>(x[d ? i : strided_index(l, i)]); }, \
                    [&](size_t i, U v) { out[i] = v; }); \
    }
// (Nested FOR_ALL_DTYPES would not expand: the preprocessor does not recurse.)
FOR_ALL_DTYPES(CAST, u8)
FOR_ALL_DTYPES(CAST, i8)
FOR_ALL_DTYPES(CAST, u32)
FOR_ALL_DTYPES(CAST, i32)
FOR_ALL_DTYPES(CAST, i64)
FOR_ALL_DTYPES(CAST, f16)
FOR_ALL_DTYPES(CAST, bf16)
FOR_ALL_DTYPES(CAST, f32)
FOR_ALL_DTYPES(CAST, f64)

// ---- copy_into_{T}(n, src_layout, dst_layout, x, out): a view written into a strided destination (the slabs of
// `cat`, whose output is dense and each destination a narrowed view of it) ------------------------------------------
#define COPY_INTO(T, _) \
    extern "C" __global__ void copy_into_##T(size_t n, Layout ls, Layout ld, const T *x, T *out) { \
        GRID_STRIDE_LOOP(i, n) out[strided_index(ld, i)] = x[strided_index(ls, i)]; \
    }
FOR_ALL_DTYPES(COPY_INTO, _)
