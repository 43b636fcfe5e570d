// The geometry of a convolution or pooling call, shared by src/ops/conv/conv.cu and src/ops/pool/pool.cu.
#pragma once
#include "common.cuh"

// Mirrors `ConvGeom` in src/device/cuda/kernels.rs (136 bytes). h, w: input size; oh, ow: output size.
// count_pad: average pooling divides by the window clipped to the padded input (1) or to the input (0).
struct Geom {
    unsigned long long n, c_in, h, w, c_out, kh, kw, oh, ow;
    unsigned long long stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
    unsigned long long count_pad;
};

__device__ __forceinline__ size_t at4(const Layout &l, size_t a, size_t b, size_t c, size_t d) {
    return a * l.strides[0] + b * l.strides[1] + c * l.strides[2] + d * l.strides[3];
}
