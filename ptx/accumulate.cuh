// Accumulators shared by the reductions (reduce.cu) and the scans (scan.cu), with the host's rules
// (src/ops/reduce/mod.rs): integers in wrapping i64 (results truncate to T), f16/bf16/f32 in float, f64 in double;
// log-sum-exp as a (max, sum of exp(x - max)) state.
#pragma once
#include "common.cuh"

template <typename T> struct RAcc { typedef typename Acc<T>::type type; };
template <> struct RAcc<u8> { typedef i64 type; };
template <> struct RAcc<i8> { typedef i64 type; };
template <> struct RAcc<u32> { typedef i64 type; };
template <> struct RAcc<i32> { typedef i64 type; };

__device__ __forceinline__ float acc_add(float a, float b) { return a + b; }
__device__ __forceinline__ double acc_add(double a, double b) { return a + b; }
__device__ __forceinline__ i64 acc_add(i64 a, i64 b) {
    return (i64)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ float acc_mul(float a, float b) { return a * b; }
__device__ __forceinline__ double acc_mul(double a, double b) { return a * b; }
__device__ __forceinline__ i64 acc_mul(i64 a, i64 b) {
    return (i64)((unsigned long long)a * (unsigned long long)b);
}

template <typename A> __device__ __forceinline__ A lowest();
template <> __device__ __forceinline__ float lowest<float>() { return -INFINITY; }
template <> __device__ __forceinline__ double lowest<double>() { return -(double)INFINITY; }
template <> __device__ __forceinline__ i64 lowest<i64>() { return INT64_MIN; }
template <typename A> __device__ __forceinline__ A highest();
template <> __device__ __forceinline__ float highest<float>() { return INFINITY; }
template <> __device__ __forceinline__ double highest<double>() { return (double)INFINITY; }
template <> __device__ __forceinline__ i64 highest<i64>() { return INT64_MAX; }

template <typename T> __device__ __forceinline__ typename RAcc<T>::type to_racc(T x) {
    return (typename RAcc<T>::type)up(x);
}
// Integers truncate (wrap) into T; floats round.
template <typename T> __device__ __forceinline__ T from_racc(typename RAcc<T>::type a) { return down<T>(a); }
template <> __device__ __forceinline__ u8 from_racc<u8>(i64 a) { return (u8)(unsigned long long)a; }
template <> __device__ __forceinline__ u32 from_racc<u32>(i64 a) { return (u32)(unsigned long long)a; }

// (running max, sum of exp(x - max)), merged with the host's rules for NaN and infinities
// (`log_sum_exp_merge`): `b` covers later elements, one element `x` is {x, 1}.
template <typename A> struct LseState {
    A m, s;
};
template <typename A> __device__ __forceinline__ LseState<A> lse_empty() {
    LseState<A> r;
    r.m = lowest<A>();
    r.s = (A)0;
    return r;
}
template <typename A> __device__ __forceinline__ LseState<A> lse_of(A x) {
    LseState<A> r;
    r.m = x;
    r.s = (A)1;
    return r;
}
template <typename A> __device__ __forceinline__ LseState<A> lse_merge(LseState<A> a, LseState<A> b) {
    LseState<A> r;
    if (m_isnan(a.m) || m_isnan(b.m)) {
        r.m = (A)NAN;
        r.s = (A)1;
        return r;
    }
    if (b.m == lowest<A>()) return a;
    if (a.m == lowest<A>()) return b;
    if (a.m == b.m) {
        r.m = a.m;
        r.s = a.s + b.s;
    } else if (b.m > a.m) {
        r.m = b.m;
        r.s = b.s + a.s * m_exp(a.m - b.m);
    } else {
        r.m = a.m;
        r.s = a.s + b.s * m_exp(b.m - a.m);
    }
    return r;
}
// The state's value: max + ln(sum), or -inf for no elements.
template <typename A> __device__ __forceinline__ A lse_finish(LseState<A> s) {
    return s.m == lowest<A>() ? s.m : s.m + m_log(s.s);
}
