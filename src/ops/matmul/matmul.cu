// Batched matrix product C[b] = A[b] B[b] over strided operands (a transposed or broadcast operand is read in
// place, never copied), accumulating in float (f16/bf16/f32) or double (f64).
//
//   matmul_{T}(Gemm g, a, b, c)
//
// A block computes a 128 x 128 tile of C (64 x 64 for f64) from 16-deep slices of A and B staged in shared
// memory; each of its 256 threads owns an 8 x 8 (4 x 4) sub-tile in two row and two column groups, so shared
// reads do not conflict. Shared memory holds two slices: the next one is fetched from global memory into
// registers while the current one is multiplied, then stored into the other buffer, so each slice costs one
// barrier. Global loads run along whichever stride of an operand is 1, so rows or columns are read coalesced;
// for f32 they are 16-byte vectors when the operands' strides, sizes and addresses allow (`vectorisable`).
// The kernel picks one of these layouts per launch and runs a loop compiled for it, so the loop carries no
// layout tests and each load is a pointer increment.

// `struct Gemm` (sizes and element strides) mirrors `GemmDims` in src/device/cuda/kernels.rs (96 bytes); it lives
// in wmma.cuh with the tensor-core form of this kernel, `matmul_tc_f16` (f16 tensor cores need sm_70; bf16 ones
// sm_80, hence their own module, matmul_sm80.cu).
#include "wmma.cuh"

#define BK 16
#define THREADS 256
// One block per SM: a layout's loop takes ~170 registers. Capped at 128 for two blocks per SM it spilled and ran
// 4% slower on an H100.

template <int V> struct Width {};

// V consecutive elements from global memory, widened to the accumulator type.
template <typename T, typename A> __device__ __forceinline__ void global_load(const T *p, A *v, Width<1>) {
    v[0] = up(p[0]);
}
__device__ __forceinline__ void global_load(const float *p, float *v, Width<4>) {
    const float4 q = *reinterpret_cast<const float4 *>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
// V consecutive shared values.
template <typename A> __device__ __forceinline__ void shared_store(A *p, const A *v, Width<1>) { p[0] = v[0]; }
__device__ __forceinline__ void shared_store(float *p, const float *v, Width<4>) {
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}

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

// One operand's share of a BK x X slice (X = the block's rows for A, its columns for B), staged in shared memory
// as `sm[k][x]`. The thread's vectors (V elements each) run along k when K_FAST (stored transposed), else along x.
// `sx`/`sk` are the operand's strides along x and k.
template <typename T, int X, int V, bool K_FAST> struct SliceLoader {
    typedef typename Acc<T>::type A;
    enum { PER_LINE = (K_FAST ? BK : X) / V, STEP = THREADS / PER_LINE, N = BK * X / (THREADS * V) };
    // Transposed 4-wide stores put a warp's 8 lines x 4 vectors on 16 banks (two-way conflicts); moving the
    // second half of the slice's k rows by 8 columns spreads them over all 32. Readers apply the same XOR.
    enum { SWIZZLED = K_FAST && V == 4 };
    static __device__ __forceinline__ int swizzle(int k) { return SWIZZLED ? (k & 8) : 0; }
    const T *p;                  // this thread's first vector in the next slice
    size_t s_step, k_step;       // from one of its vectors to the next; from one slice to the next
    long long x_left;            // x extent left from its first vector
    unsigned long long k_ext;
    int line, fast;
    A v[N][V];

    __device__ __forceinline__ SliceLoader(const T *base, size_t sx, size_t sk, size_t x0, size_t x_ext,
                                           size_t k_extent) {
        line = threadIdx.x / PER_LINE;
        fast = threadIdx.x % PER_LINE * V;
        const size_t x = x0 + (K_FAST ? line : fast), k = K_FAST ? fast : line;
        p = base + x * sx + k * sk;
        s_step = STEP * (K_FAST ? sx : sk);
        k_step = BK * sk;
        x_left = (long long)x_ext - (long long)x;
        k_ext = k_extent;
    }
    // Reads the slice starting at k0 (zeros outside the operand) and moves on to the next.
    __device__ __forceinline__ void fetch(size_t k0) {
#pragma unroll
        for (int s = 0; s < N; ++s) {
            const bool ok = K_FAST ? (s * STEP < x_left && k0 + fast < k_ext)
                                   : (x_left > 0 && k0 + line + s * STEP < k_ext);
            if (ok) {
                global_load(p + s * s_step, v[s], Width<V>());
            } else {
#pragma unroll
                for (int j = 0; j < V; ++j) v[s][j] = (A)0;
            }
        }
        p += k_step;
    }
    __device__ __forceinline__ void store(A (*sm)[X + 4]) const {
#pragma unroll
        for (int s = 0; s < N; ++s) {
            const int l = line + s * STEP;
            if (K_FAST) {
#pragma unroll
                for (int j = 0; j < V; ++j) sm[fast + j][l ^ swizzle(fast + j)] = v[s][j];
            } else {
                shared_store(&sm[l][fast], v[s], Width<V>());
            }
        }
    }
};

// R: rows (and columns) per thread group; a thread owns 2R x 2R outputs and a block 32R x 32R. Float uses R = 4
// (128 x 128 tiles); double R = 2 (64 x 64), which keeps its accumulators in registers.
// A_K: A's vectors run along k (A's column stride is 1); B_N: B's run along n.
template <typename T, int R, int V, bool A_K, bool B_N>
__device__ __forceinline__ void matmul_tiles(const Gemm &g, const T *a, const T *b, T *c,
                                             typename Acc<T>::type (*sm)[2][BK][32 * R + 4]) {
    typedef typename Acc<T>::type A;
    const int BM = 32 * R, BN = 32 * R;
    const int t = threadIdx.x, ty = t / 16, tx = t % 16;
    const size_t row0 = (size_t)blockIdx.y * BM, col0 = (size_t)blockIdx.x * BN;
    for (size_t batch = blockIdx.z; batch < g.batch; batch += gridDim.z) {
        SliceLoader<T, BM, V, A_K> la(a + batch * g.a_batch, g.a_row, g.a_col, row0, g.m, g.k);
        SliceLoader<T, BN, V, !B_N> lb(b + batch * g.b_batch, g.b_col, g.b_row, col0, g.n, g.k);
        A acc[2 * R][2 * R];
#pragma unroll
        for (int i = 0; i < 2 * R; ++i)
#pragma unroll
            for (int j = 0; j < 2 * R; ++j) acc[i][j] = (A)0;
        la.fetch(0);
        lb.fetch(0);
        la.store(sm[0][0]);
        lb.store(sm[1][0]);
        __syncthreads();
        int cur = 0;
        for (size_t k0 = 0; k0 < g.k; k0 += BK) {
            const bool more = k0 + BK < g.k;
            if (more) {
                la.fetch(k0 + BK);
                lb.fetch(k0 + BK);
            }
            A(*as)[BM + 4] = sm[0][cur];
            A(*bs)[BN + 4] = sm[1][cur];
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                A ar[2 * R], br[2 * R];
                const int sa = decltype(la)::swizzle(kk), sb = decltype(lb)::swizzle(kk);
                load_group(&as[kk][(ty * R) ^ sa], ar, R);
                load_group(&as[kk][(BM / 2 + ty * R) ^ sa], ar + R, R);
                load_group(&bs[kk][(tx * R) ^ sb], br, R);
                load_group(&bs[kk][(BN / 2 + tx * R) ^ sb], br + R, R);
#pragma unroll
                for (int i = 0; i < 2 * R; ++i)
#pragma unroll
                    for (int j = 0; j < 2 * R; ++j) acc[i][j] += ar[i] * br[j];
            }
            if (more) {
                la.store(sm[0][cur ^ 1]);
                lb.store(sm[1][cur ^ 1]);
            }
            // The other buffer is complete, and nobody reads this one any more (it is refilled next slice).
            __syncthreads();
            cur ^= 1;
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
}

// Whether 4-element vector loads fit both operands: the stride along the loaded axis is 1, the other strides and
// that axis's extent are multiples of 4 (a vector is wholly inside or wholly outside), addresses 16-byte aligned.
__device__ __forceinline__ bool vectorisable(const Gemm &g, const void *a, const void *b, bool a_k, bool b_n) {
    const bool batches = g.batch == 1 || (g.a_batch % 4 == 0 && g.b_batch % 4 == 0);
    const bool a_ok = a_k ? (g.a_col == 1 && g.a_row % 4 == 0 && g.k % 4 == 0)
                          : (g.a_row == 1 && g.a_col % 4 == 0 && g.m % 4 == 0);
    const bool b_ok = b_n ? (g.b_col == 1 && g.b_row % 4 == 0 && g.n % 4 == 0)
                          : (g.b_row == 1 && g.b_col % 4 == 0 && g.k % 4 == 0);
    return batches && a_ok && b_ok && ((size_t)a % 16 == 0) && ((size_t)b % 16 == 0);
}

// The loop compiled for this launch's layout: V-wide loads, and along which axis each operand is read.
template <typename T, int R, int V>
__device__ __forceinline__ void matmul_layout(const Gemm &g, const T *a, const T *b, T *c, bool a_k, bool b_n,
                                              typename Acc<T>::type (*sm)[2][BK][32 * R + 4]) {
    if (a_k) {
        if (b_n) matmul_tiles<T, R, V, true, true>(g, a, b, c, sm);
        else matmul_tiles<T, R, V, true, false>(g, a, b, c, sm);
    } else {
        if (b_n) matmul_tiles<T, R, V, false, true>(g, a, b, c, sm);
        else matmul_tiles<T, R, V, false, false>(g, a, b, c, sm);
    }
}

template <typename T, int R> __device__ __forceinline__ void matmul_body(const Gemm &g, const T *a, const T *b, T *c) {
    // Declared here, once: each instantiation of matmul_tiles would otherwise get its own.
    __shared__ __align__(16) typename Acc<T>::type sm[2][2][BK][32 * R + 4];
    const bool a_k = g.a_col == 1, b_n = g.b_col == 1 || g.b_row != 1;
    matmul_layout<T, R, 1>(g, a, b, c, a_k, b_n, sm);
}
// f32 also has the vector-load loops.
template <> __device__ __forceinline__ void matmul_body<float, 4>(const Gemm &g, const float *a, const float *b,
                                                                  float *c) {
    __shared__ __align__(16) float sm[2][2][BK][32 * 4 + 4];
    const bool a_k = g.a_col == 1, b_n = g.b_col == 1 || g.b_row != 1;
    if (vectorisable(g, a, b, a_k, b_n)) matmul_layout<float, 4, 4>(g, a, b, c, a_k, b_n, sm);
    else matmul_layout<float, 4, 1>(g, a, b, c, a_k, b_n, sm);
}

// Rows/columns per group, by dtype (the host sizes the grid with the same numbers: `matmul_tile`).
template <typename T> struct TileR { enum { value = 4 }; };
template <> struct TileR<f64> { enum { value = 2 }; };

#define MATMUL_KERNEL(T, _)                                                                                      \
    extern "C" __global__ void __launch_bounds__(THREADS)                                                        \
        matmul_##T(Gemm g, const T *a, const T *b, T *c) {                                                       \
        matmul_body<T, TileR<T>::value>(g, a, b, c);                                                             \
    }
FOR_FLOAT_DTYPES(MATMUL_KERNEL, _)

MATMUL_TC_KERNEL(f16)
