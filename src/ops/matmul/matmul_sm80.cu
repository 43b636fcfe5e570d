// nvcc-arch: compute_80
// bf16 tensor cores (WMMA) need sm_80: this module is compiled for compute_80 and loaded only on such GPUs; older
// ones run bf16 products through the f32-accumulator kernel of matmul.cu.
#include "wmma.cuh"

MATMUL_TC_KERNEL(bf16)
