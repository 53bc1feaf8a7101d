"""Sanitizer fixture (racecheck): vector_add in CUDA C++ that stages a + b through shared memory and reads
a slot of the next warp back with no __syncthreads() between the write and the read (a shared-memory hazard
racecheck reports as an error), then writes its own slot's value, so the output is usually right. (The first
version read its neighbour in the same warp: racecheck counts that only as a warning, H100, 2026-12-05.)"""
from torch.utils.cpp_extension import load_inline

CUDA_SRC = """
__global__ void staged_add(const float* a, const float* b, float* out, int n) {
    __shared__ float stage[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    stage[threadIdx.x] = i < n ? a[i] + b[i] : 0.0f;
    float neighbour = stage[(threadIdx.x + 32) % 256];  // no __syncthreads(): another warp's, maybe not yet
    if (i < n) out[i] = stage[threadIdx.x] + 0.0f * neighbour;
}

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    int n = a.numel();
    staged_add<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
CPP_SRC = "torch::Tensor add(torch::Tensor a, torch::Tensor b);"

_ext = load_inline("kmcp_shared_race", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["add"])


def custom_kernel(data):
    a, b = data
    return _ext.add(a.float().contiguous(), b.float().contiguous()).to(a.dtype)
