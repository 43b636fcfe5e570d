// Batched matrix product C[b] = A[b] B[b] over strided operands (a transposed or broadcast operand is read in
// place, never copied), accumulating in float (f16/bf16/f32) or double (f64).
//
//   matmul_{T}(Gemm g, a, b, c)
//
// A block computes a 128 x 128 tile of C (64 x 64 for f64) from 16-deep slices of A and B staged in shared
// memory; each of its 256 threads owns an 8 x 8 (4 x 4) sub-tile in two row and two column groups, so shared
// reads do not conflict.
// Global loads follow whichever stride of an operand is 1, so rows or columns are read coalesced.

// `struct Gemm` (sizes and element strides) mirrors `GemmDims` in src/device/cuda/kernels.rs (96 bytes); it lives
// in wmma.cuh with the tensor-core form of this kernel, `matmul_tc_f16` (f16 tensor cores need sm_70; bf16 ones
// sm_80, hence their own module, matmul_sm80.cu).
#include "wmma.cuh"

#define BK 16
#define THREADS 256

// Four consecutive shared values (16-byte aligned for float, 32 for double) in as few loads as the type allows.
__device__ __forceinline__ void load4(const float *p, float *v) {
    const float4 q = *reinterpret_cast<const float4 *>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void load4(const double *p, double *v) {
    const double2 q0 = reinterpret_cast<const double2 *>(p)[0], q1 = reinterpret_cast<const double2 *>(p)[1];
    v[0] = q0.x, v[1] = q0.y, v[2] = q1.x, v[3] = q1.y;
}
template <typename A> __device__ __forceinline__ void load_group(const A *p, A *v, int r) {
    if (r == 4) {
        load4(p, v);
    } else {
#pragma unroll
        for (int i = 0; i < r; ++i) v[i] = p[i];
    }
}

// R: rows (and columns) per thread group; a thread owns 2R x 2R outputs and a block 32R x 32R. Float uses R = 4
// (128 x 128 tiles); double R = 2 (64 x 64), which keeps its accumulators in registers. The next K-slice is
// fetched from global memory into registers while the current one is multiplied from shared memory.
template <typename T, int R>
__device__ __forceinline__ void matmul_body(const Gemm &g, const T *a, const T *b, T *c) {
    typedef typename Acc<T>::type A;
    const int BM = 32 * R, BN = 32 * R, LOADS = 32 * R * BK / THREADS;
    // A's rows padded by 4: a K-fast operand is stored down columns, which would hit one bank 16 times.
    __shared__ __align__(16) A as[BK][32 * R + 4];
    __shared__ __align__(16) A bs[BK][32 * R];
    const int t = threadIdx.x, ty = t / 16, tx = t % 16;
    const size_t row0 = (size_t)blockIdx.y * BM, col0 = (size_t)blockIdx.x * BN;
    const bool a_k_fast = g.a_col == 1, b_n_fast = g.b_col == 1 || g.b_row != 1;
    // This thread's share of each slice: element e = t + s * THREADS of the (row, k) and (k, column) tiles.
#define A_ROW(s) (a_k_fast ? (t + (s) * THREADS) / BK : (t + (s) * THREADS) % BM)
#define A_K(s) (a_k_fast ? (t + (s) * THREADS) % BK : (t + (s) * THREADS) / BM)
#define B_COL(s) (b_n_fast ? (t + (s) * THREADS) % BN : (t + (s) * THREADS) / BK)
#define B_K(s) (b_n_fast ? (t + (s) * THREADS) / BN : (t + (s) * THREADS) % BK)
    for (size_t batch = blockIdx.z; batch < g.batch; batch += gridDim.z) {
        const T *ab = a + batch * g.a_batch;
        const T *bb = b + batch * g.b_batch;
        A acc[2 * R][2 * R];
#pragma unroll
        for (int i = 0; i < 2 * R; ++i)
#pragma unroll
            for (int j = 0; j < 2 * R; ++j) acc[i][j] = (A)0;
        A next_a[LOADS], next_b[LOADS];
        auto fetch = [&](size_t k0) {
#pragma unroll
            for (int s = 0; s < LOADS; ++s) {
                const size_t gr = row0 + A_ROW(s), gk = k0 + A_K(s);
                next_a[s] = (gr < g.m && gk < g.k) ? up(ab[gr * g.a_row + gk * g.a_col]) : (A)0;
                const size_t gc = col0 + B_COL(s), gkb = k0 + B_K(s);
                next_b[s] = (gc < g.n && gkb < g.k) ? up(bb[gkb * g.b_row + gc * g.b_col]) : (A)0;
            }
        };
        fetch(0);
        for (size_t k0 = 0; k0 < g.k; k0 += BK) {
#pragma unroll
            for (int s = 0; s < LOADS; ++s) {
                as[A_K(s)][A_ROW(s)] = next_a[s];
                bs[B_K(s)][B_COL(s)] = next_b[s];
            }
            __syncthreads();
            if (k0 + BK < g.k) fetch(k0 + BK);
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                A ar[2 * R], br[2 * R];
                load_group(&as[kk][ty * R], ar, R);
                load_group(&as[kk][BM / 2 + ty * R], ar + R, R);
                load_group(&bs[kk][tx * R], br, R);
                load_group(&bs[kk][BN / 2 + tx * R], br + R, R);
#pragma unroll
                for (int i = 0; i < 2 * R; ++i)
#pragma unroll
                    for (int j = 0; j < 2 * R; ++j) acc[i][j] += ar[i] * br[j];
            }
            __syncthreads();
        }
        T *cb = c + batch * g.c_batch;
#pragma unroll
        for (int i = 0; i < 2 * R; ++i) {
            const size_t r = row0 + (i < R ? ty * R + i : BM / 2 + ty * R + i - R);
            if (r >= g.m) continue;
#pragma unroll
            for (int j = 0; j < 2 * R; ++j) {
                const size_t cc = col0 + (j < R ? tx * R + j : BN / 2 + tx * R + j - R);
                if (cc < g.n) cb[r * g.c_row + cc] = down<T>(acc[i][j]);
            }
        }
    }
#undef A_ROW
#undef A_K
#undef B_COL
#undef B_K
}

// Rows/columns per group, by dtype (the host sizes the grid with the same numbers: `matmul_tile`).
template <typename T> struct TileR { enum { value = 4 }; };
template <> struct TileR<f64> { enum { value = 2 }; };

#define MATMUL_KERNEL(T, _)                                                                                      \
    extern "C" __global__ void __launch_bounds__(THREADS) matmul_##T(Gemm g, const T *a, const T *b, T *c) {    \
        matmul_body<T, TileR<T>::value>(g, a, b, c);                                                                             \
    }
FOR_FLOAT_DTYPES(MATMUL_KERNEL, _)

MATMUL_TC_KERNEL(f16)
