// Softmax, log-softmax, layer norm and RMS norm along one axis, with the formulas of the host devices'
// `AlongAxis::apply` (src/ops/along_axis/mod.rs): one block per lane, max-shifted, in float (f16/bf16/f32) or double
// (f64). Only the summation order differs (the block's threads, then a tree), so results agree to rounding.
//
//   {op}_{T}(rows, len, outer_in, outer_out, in_stride, out_stride, x, out, eps)
//
// `outer_in`/`outer_out` walk the lanes' first elements in the input view and the dense output; the lane's
// elements are `in_stride` / `out_stride` apart.
#include "block.cuh"

template <typename A> struct AddF {
    __device__ A operator()(A a, A b) const { return a + b; }
};
template <typename A> struct MaxF {
    __device__ A operator()(A a, A b) const { return m_max(a, b); }
};

enum LaneOp { SOFTMAX, LOG_SOFTMAX, LAYER_NORM, RMS_NORM };

template <LaneOp OP, typename T>
__device__ __forceinline__ void lane_body(size_t rows, size_t len, const Layout &outer_in, const Layout &outer_out,
                                          size_t in_stride, size_t out_stride, const T *x, T *out, double eps) {
    typedef typename Acc<T>::type A;
    const A n = (A)len;
    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *src = x + strided_index(outer_in, row);
        T *dst = out + strided_index(outer_out, row);
        if (OP == SOFTMAX || OP == LOG_SOFTMAX) {
            A m = -(A)INFINITY;
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x) m = m_max(m, up(src[i * in_stride]));
            m = block_all_reduce(m, -(A)INFINITY, MaxF<A>());
            // An infinite maximum shifts by 0, so an all -inf lane gives NaN (0/0) as on the CPU.
            const A shift = (m == (A)INFINITY || m == -(A)INFINITY) ? (A)0 : m;
            A s = 0;
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x) s += m_exp(up(src[i * in_stride]) - shift);
            s = block_all_reduce(s, (A)0, AddF<A>());
            if (OP == SOFTMAX) {
                const A inv = (A)1 / s;
    #pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x)
                    dst[i * out_stride] = down<T>(m_exp(up(src[i * in_stride]) - shift) * inv);
            } else {
                const A log_sum = shift + m_log(s);
    #pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x)
                    dst[i * out_stride] = down<T>(up(src[i * in_stride]) - log_sum);
            }
        } else if (OP == LAYER_NORM) {
            // Moments of x - x[0], as on the host: better conditioned when |mean| >> spread, and a constant lane
            // gives exact zeros (its deviations are exactly 0, whatever order the block sums in).
            const A pivot = up(src[0]);
            A s = 0;
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x) s += up(src[i * in_stride]) - pivot;
            const A shifted_mean = block_all_reduce(s, (A)0, AddF<A>()) / n;
            A q = 0;
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x) {
                const A d = (up(src[i * in_stride]) - pivot) - shifted_mean;
                q += d * d;
            }
            const A var = block_all_reduce(q, (A)0, AddF<A>()) / n;
            const A inv = (A)1 / m_sqrt(var + (A)eps);
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x)
                dst[i * out_stride] = down<T>(((up(src[i * in_stride]) - pivot) - shifted_mean) * inv);
        } else {
            A q = 0;
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x) {
                const A v = up(src[i * in_stride]);
                q += v * v;
            }
            const A ms = block_all_reduce(q, (A)0, AddF<A>()) / n;
            const A inv = (A)1 / m_sqrt(ms + (A)eps);
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x)
                dst[i * out_stride] = down<T>(up(src[i * in_stride]) * inv);
        }
    }
}

#define LANE_KERNEL(T, NAME, OP)                                                                                   \
    extern "C" __global__ void NAME##_##T(size_t rows, size_t len, Layout outer_in, Layout outer_out,              \
                                          size_t in_stride, size_t out_stride, const T *x, T *out, double eps) {   \
        lane_body<OP, T>(rows, len, outer_in, outer_out, in_stride, out_stride, x, out, eps);                    \
    }
#define LANE_KERNELS(T, _) \
    LANE_KERNEL(T, softmax, SOFTMAX) LANE_KERNEL(T, log_softmax, LOG_SOFTMAX) \
    LANE_KERNEL(T, layer_norm, LAYER_NORM) LANE_KERNEL(T, rms_norm, RMS_NORM)
FOR_FLOAT_DTYPES(LANE_KERNELS, _)
