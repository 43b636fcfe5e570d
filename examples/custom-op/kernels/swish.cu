// Swish, x * sigmoid(x), and its gradient, for f32 and f64: a thread per element, grid-stride loops.
// Launched by src/lib.rs through typed_tensor::device::cuda::PtxKernel with (x, [y, dy,] out, n).

template <typename T> __device__ T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }

template <typename T> __device__ void swish(const T* x, T* y, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        y[i] = x[i] * sigmoid(x[i]);
    }
}

// d/dx x s(x) = s + x s (1 - s), times the output's gradient.
template <typename T> __device__ void swish_backward(const T* x, const T* dy, T* dx, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        T s = sigmoid(x[i]);
        dx[i] = dy[i] * (s + x[i] * s * (T(1) - s));
    }
}

extern "C" __global__ void swish_f32(const float* x, float* y, unsigned long long n) { swish(x, y, n); }
extern "C" __global__ void swish_f64(const double* x, double* y, unsigned long long n) { swish(x, y, n); }
extern "C" __global__ void swish_backward_f32(const float* x, const float* dy, float* dx, unsigned long long n) {
    swish_backward(x, dy, dx, n);
}
extern "C" __global__ void swish_backward_f64(const double* x, const double* dy, double* dx, unsigned long long n) {
    swish_backward(x, dy, dx, n);
}
