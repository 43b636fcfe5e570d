// Block-level reductions: warp shuffles, then one value per warp through shared memory. Blocks are a multiple
// of 32 threads (the launcher guarantees it). The result is valid in thread 0.
#pragma once
#include "common.cuh"

// Shuffles any trivially copyable state down the warp, one 32-bit word at a time.
template <typename S> __device__ __forceinline__ S shfl_down_any(S s, int delta) {
    const int words = (sizeof(S) + 3) / 4;
    int w[words];
    memcpy(w, &s, sizeof(S));
#pragma unroll
    for (int k = 0; k < words; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta);
    memcpy(&s, w, sizeof(S));
    return s;
}

// Reduces `s` over the block with `merge` (associative and commutative); `identity` fills the unused slots.
// Ends with a barrier, so the shared scratch can be reused right away.
template <typename S, typename Merge>
__device__ __forceinline__ S block_reduce(S s, S identity, Merge merge) {
    __shared__ __align__(16) unsigned char scratch[32 * sizeof(S)];
    S *slots = reinterpret_cast<S *>(scratch);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) s = merge(s, shfl_down_any(s, d));
    if (lane == 0) slots[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < warps ? slots[lane] : identity;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) s = merge(s, shfl_down_any(s, d));
    }
    __syncthreads();
    return s;
}

// The reduced value broadcast to every thread of the block.
template <typename S, typename Merge>
__device__ __forceinline__ S block_all_reduce(S s, S identity, Merge merge) {
    __shared__ __align__(16) unsigned char result[sizeof(S)];
    s = block_reduce(s, identity, merge);
    if (threadIdx.x == 0) *reinterpret_cast<S *>(result) = s;
    __syncthreads();
    s = *reinterpret_cast<S *>(result);
    __syncthreads();
    return s;
}
