// Tensor-core batched matrix product for 16-bit floats through WMMA, with f32 accumulators. Same parameters and
// semantics as `matmul_{T}` (src/ops/matmul/matmul.cu): `matmul_tc_{T}(Gemm g, a, b, c)`.
//
// A block computes a 128 x 128 tile of C with 8 warps (2 x 4), each owning 64 x 32 outputs as 4 x 2 fragments of
// 16 x 16. K advances 32 at a time through padded shared tiles (the padding keeps fragment loads off one bank and
// their rows 32-byte aligned). Operands are read through their strides, so transposed views are not copied;
// fragments go out through a per-warp staging tile so edges are bounds-checked and rounded to T once.
#pragma once
#include <mma.h>
#include "common.cuh"

struct Gemm {
    unsigned long long batch, m, n, k;
    unsigned long long a_batch, a_row, a_col;
    unsigned long long b_batch, b_row, b_col;
    unsigned long long c_batch, c_row;
};

#define TC_M 128
#define TC_N 128
#define TC_K 32
#define TC_APAD (TC_K + 16)
#define TC_BPAD (TC_N + 16)

template <typename T>
__device__ __forceinline__ void matmul_tc_body(const Gemm &g, const T *a, const T *b, T *c) {
    using namespace nvcuda;
    __shared__ __align__(32) T as[TC_M * TC_APAD];
    __shared__ __align__(32) T bs[TC_K * TC_BPAD];
    __shared__ __align__(32) float stage[8][16 * 16];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32, wm = warp / 4, wn = warp % 4;
    const size_t row0 = (size_t)blockIdx.y * TC_M, col0 = (size_t)blockIdx.x * TC_N;
    const bool a_k_fast = g.a_col == 1, b_n_fast = g.b_col == 1 || g.b_row != 1;
    const T zero = down<T>(0.f);
    for (size_t batch = blockIdx.z; batch < g.batch; batch += gridDim.z) {
        const T *ab = a + batch * g.a_batch;
        const T *bb = b + batch * g.b_batch;
        // Rows of A along K and rows of B along N, 16-byte aligned: whole tiles load 8 elements at a time.
        const bool vec = g.a_col == 1 && g.b_col == 1 && g.a_row % 8 == 0 && g.b_row % 8 == 0 &&
                         (size_t)ab % 16 == 0 && (size_t)bb % 16 == 0;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);
        for (size_t k0 = 0; k0 < g.k; k0 += TC_K) {
            if (vec && row0 + TC_M <= g.m && col0 + TC_N <= g.n && k0 + TC_K <= g.k) {
                // A whole tile of dense rows: 16-byte loads (8 elements), two per thread per operand.
#pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const int e = t + s * 256, r = e / 4, k8 = (e % 4) * 8;
                    *reinterpret_cast<uint4 *>(&as[r * TC_APAD + k8]) =
                        *reinterpret_cast<const uint4 *>(&ab[(row0 + r) * g.a_row + k0 + k8]);
                    const int kk = e / 16, c8 = (e % 16) * 8;
                    *reinterpret_cast<uint4 *>(&bs[kk * TC_BPAD + c8]) =
                        *reinterpret_cast<const uint4 *>(&bb[(k0 + kk) * g.b_row + col0 + c8]);
                }
            } else {
#pragma unroll 4
                for (int s = 0; s < TC_M * TC_K / 256; ++s) {
                    const int e = t + s * 256;
                    const int r = a_k_fast ? e / TC_K : e % TC_M, kk = a_k_fast ? e % TC_K : e / TC_M;
                    const size_t gr = row0 + r, gk = k0 + kk;
                    as[r * TC_APAD + kk] = (gr < g.m && gk < g.k) ? ab[gr * g.a_row + gk * g.a_col] : zero;
                }
#pragma unroll 4
                for (int s = 0; s < TC_K * TC_N / 256; ++s) {
                    const int e = t + s * 256;
                    const int cc = b_n_fast ? e % TC_N : e / TC_K, kk = b_n_fast ? e / TC_N : e % TC_K;
                    const size_t gc = col0 + cc, gk = k0 + kk;
                    bs[kk * TC_BPAD + cc] = (gc < g.n && gk < g.k) ? bb[gk * g.b_row + gc * g.b_col] : zero;
                }
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < TC_K; kk += 16) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[2];
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], bs + kk * TC_BPAD + wn * 32 + j * 16, TC_BPAD);
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
                    wmma::load_matrix_sync(fa, as + (wm * 64 + i * 16) * TC_APAD + kk, TC_APAD);
#pragma unroll
                    for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa, fb[j], acc[i][j]);
                }
            }
            __syncthreads();
        }
        T *cb = c + batch * g.c_batch;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                wmma::store_matrix_sync(stage[warp], acc[i][j], 16, wmma::mem_row_major);
                __syncwarp();
                for (int q = lane; q < 256; q += 32) {
                    const size_t r = row0 + wm * 64 + i * 16 + q / 16, cc = col0 + wn * 32 + j * 16 + q % 16;
                    if (r < g.m && cc < g.n) cb[r * g.c_row + cc] = down<T>(stage[warp][q]);
                }
                __syncwarp();
            }
    }
}

#define MATMUL_TC_KERNEL(T)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) matmul_tc_##T(Gemm g, const T *a, const T *b, T *c) {  \
        matmul_tc_body<T>(g, a, b, c);                                                                        \
    }
