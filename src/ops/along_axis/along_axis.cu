// Softmax, log-softmax, layer norm and RMS norm along one axis, with the formulas of the host devices'
// `AlongAxis::apply` (src/ops/along_axis/mod.rs): one block per lane, max-shifted, in float (f16/bf16/f32) or double
// (f64). Only the summation order differs (the block's threads, then a tree), so results agree to rounding. The lane
// is read from global memory once when it fits in the block's dynamic shared memory (`Lane` below).
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

// Bytes of dynamic shared memory this launch got.
__device__ __forceinline__ unsigned dynamic_shared_bytes() {
    unsigned bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    return bytes;
}

// A lane's elements: the first pass reads them from global memory and, when the launch gave room for the whole
// lane in dynamic shared memory, keeps them there for the later passes (one read of the input instead of two or
// three); without room the later passes read global memory again. The first pass reads 16 bytes at a time when
// the lane is dense, 16-byte aligned and a whole number of such vectors long (`wide`): more bytes in flight per
// thread, which is what a memory-bound pass needs. The later passes walk the lane element by element, so they run
// after a barrier (the block reduction between the passes) and the next lane waits for them (`next_lane`).
template <typename T> struct Lane {
    const T *src;
    size_t stride;
    T *cache;
    bool wide;
    __device__ __forceinline__ T again(size_t i) const { return cache ? cache[i] : src[i * stride]; }
    __device__ __forceinline__ void next_lane() const {
        if (cache) __syncthreads();
    }
};

// Folds `f` over the elements this thread reads in the first pass, keeping them in the cache when there is one.
template <typename A, typename T, typename F>
__device__ __forceinline__ A first_pass(const Lane<T> &lane, size_t len, A acc, F f) {
    constexpr int V = 16 / sizeof(T);
    if (lane.wide) {
        const uint4 *src = reinterpret_cast<const uint4 *>(lane.src);
        uint4 *cache = reinterpret_cast<uint4 *>(lane.cache);
#pragma unroll 2
        for (size_t g = threadIdx.x; g < len / V; g += blockDim.x) {
            const uint4 raw = src[g];
            if (cache) cache[g] = raw;
            const T *v = reinterpret_cast<const T *>(&raw);
#pragma unroll
            for (int j = 0; j < V; ++j) acc = f(acc, up(v[j]));
        }
    } else {
#pragma unroll 4
        for (size_t i = threadIdx.x; i < len; i += blockDim.x) {
            const T v = lane.src[i * lane.stride];
            if (lane.cache) lane.cache[i] = v;
            acc = f(acc, up(v));
        }
    }
    return acc;
}

template <LaneOp OP, typename T>
__device__ __forceinline__ void lane_body(size_t rows, size_t len, const Layout &outer_in, const Layout &outer_out,
                                          size_t in_stride, size_t out_stride, const T *x, T *out, double eps) {
    typedef typename Acc<T>::type A;
    const A n = (A)len;
    extern __shared__ __align__(16) unsigned char lane_cache[];
    T *cache = dynamic_shared_bytes() >= len * sizeof(T) ? reinterpret_cast<T *>(lane_cache) : nullptr;
    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *src = x + strided_index(outer_in, row);
        const bool wide = in_stride == 1 && reinterpret_cast<size_t>(src) % 16 == 0 && len % (16 / sizeof(T)) == 0;
        const Lane<T> lane = {src, in_stride, cache, wide};
        T *dst = out + strided_index(outer_out, row);
        if (OP == SOFTMAX || OP == LOG_SOFTMAX) {
            A m = first_pass(lane, len, -(A)INFINITY, MaxF<A>());
            m = block_all_reduce(m, -(A)INFINITY, MaxF<A>());
            // An infinite maximum shifts by 0, so an all -inf lane gives NaN (0/0) as on the CPU.
            const A shift = (m == (A)INFINITY || m == -(A)INFINITY) ? (A)0 : m;
            A s = 0;
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x) s += m_exp(up(lane.again(i)) - shift);
            s = block_all_reduce(s, (A)0, AddF<A>());
            if (OP == SOFTMAX) {
                const A inv = (A)1 / s;
#pragma unroll 4
                for (size_t i = threadIdx.x; i < len; i += blockDim.x)
                    dst[i * out_stride] = down<T>(m_exp(up(lane.again(i)) - shift) * inv);
            } else {
                const A log_sum = shift + m_log(s);
#pragma unroll 4
                for (size_t i = threadIdx.x; i < len; i += blockDim.x)
                    dst[i * out_stride] = down<T>(up(lane.again(i)) - log_sum);
            }
        } else if (OP == LAYER_NORM) {
            // Moments of x - x[0], as on the host: better conditioned when |mean| >> spread, and a constant lane
            // gives exact zeros (its deviations are exactly 0, whatever order the block sums in).
            const A pivot = up(src[0]);
            const A s = first_pass(lane, len, (A)0, [pivot](A acc, A v) { return acc + (v - pivot); });
            const A shifted_mean = block_all_reduce(s, (A)0, AddF<A>()) / n;
            A q = 0;
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x) {
                const A d = (up(lane.again(i)) - pivot) - shifted_mean;
                q += d * d;
            }
            const A var = block_all_reduce(q, (A)0, AddF<A>()) / n;
            const A inv = (A)1 / m_sqrt(var + (A)eps);
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x)
                dst[i * out_stride] = down<T>(((up(lane.again(i)) - pivot) - shifted_mean) * inv);
        } else {
            const A q = first_pass(lane, len, (A)0, [](A acc, A v) { return acc + v * v; });
            const A ms = block_all_reduce(q, (A)0, AddF<A>()) / n;
            const A inv = (A)1 / m_sqrt(ms + (A)eps);
#pragma unroll 4
            for (size_t i = threadIdx.x; i < len; i += blockDim.x)
                dst[i * out_stride] = down<T>(up(lane.again(i)) * inv);
        }
        lane.next_lane();
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
