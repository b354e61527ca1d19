// args_test.cu: the argument checks of libdainx_kernels' launchers, run on
// the host (`make check-kernels-lib`, no GPU needed): every bad argument
// returns DAINX_K_EINVAL or DAINX_K_ESCRATCH before anything is queued; an
// empty batch returns 0; a valid call without a usable device returns a
// CUDA error (positive), never crashes. With a GPU the valid calls run on
// small buffers and must return 0.
#include <cstdio>
#include <cuda_runtime.h>

#include "dainx_kernels.h"

static int fails;
#define EXPECT(cond, what)                                   \
    do {                                                     \
        if (!(cond)) {                                       \
            std::fprintf(stderr, "FAIL %s (line %d)\n", what, __LINE__); \
            fails++;                                         \
        }                                                    \
    } while (0)

int main() {
    int ndev = 0;
    const bool gpu = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
    cudaGetLastError();
    float* f = nullptr;
    int32_t* i = nullptr;
    if (gpu) {
        cudaMalloc(&f, 1 << 20);
        cudaMalloc(&i, 1 << 16);
        cudaMemset(i, 0, 1 << 16);
        cudaMemset(f, 0, 1 << 20);
    } else {
        f = (float*)0x1000;  // never dereferenced: no launch happens without a device
        i = (int32_t*)0x2000;
    }
    cudaStream_t s = 0;
    // Bad arguments.
    EXPECT(dainx_k_gather(f, f, i, -1, 2, 4, 8, 0, s) == DAINX_K_EINVAL, "gather batch < 0");
    EXPECT(dainx_k_gather(f, f, i, 4, 0, 4, 8, 0, s) == DAINX_K_EINVAL, "gather order 0");
    EXPECT(dainx_k_gather(f, f, i, 4, 2, 4, 8, 2, s) == DAINX_K_EINVAL, "gather layout 2");
    EXPECT(dainx_k_gather(nullptr, f, i, 4, 2, 4, 8, 0, s) == DAINX_K_EINVAL, "gather x NULL");
    EXPECT(dainx_k_scatter_rows(f, f, nullptr, 4, 2, 4, 8, 0, s) == DAINX_K_EINVAL, "scatter cells NULL");
    EXPECT(dainx_k_linear_forward(f, f, f, f, 4, 0, 8, 0, 0, nullptr, 0, s) == DAINX_K_EINVAL, "forward in 0");
    EXPECT(dainx_k_linear_forward(f, f, f, f, 4, 8, 8, 0, 3, nullptr, 0, s) == DAINX_K_EINVAL, "forward precision 3");
    EXPECT(dainx_k_linear_forward(f, f, f, nullptr, 4, 8, 8, 0, 0, nullptr, 0, s) == DAINX_K_EINVAL, "forward bias NULL");
    EXPECT(dainx_k_linear_forward(f, f, f, f, 4, 8, 8 << 20, 0, 0, nullptr, 0, s) != 0, "forward width past the grid");
    EXPECT(dainx_k_linear_backward(f, f, f, nullptr, f, f, 4, 8, 8, 0, 0, 0, nullptr, 0, s) == DAINX_K_EINVAL, "backward dy NULL");
    EXPECT(dainx_k_linear_backward(f, f, f, f, f, f, 4, 8, 8, 0, 0, 7, nullptr, 0, s) == DAINX_K_EINVAL, "backward precision");
    EXPECT(dainx_k_mse_grad(f, f, f, f, -2, 1, s) == DAINX_K_EINVAL, "mse n < 0");
    EXPECT(dainx_k_adam(f, f, f, f, 4, 1e-3, 0.9, 0.999, 1e-8, 0, s) == DAINX_K_EINVAL, "adam t 0");
    EXPECT(dainx_k_adam(f, f, f, f, 4, 1e-3, 1.0, 0.999, 1e-8, 1, s) == DAINX_K_EINVAL, "adam beta1 1");
    EXPECT(dainx_k_influence_dot(f, f, f, f, f, 4, 8, 0, 1, 0, nullptr, 0, s) == DAINX_K_EINVAL, "influence out 0");
    EXPECT(dainx_k_embedding_influence(f, f, i, f, 4, 2, 4, 8, 5, 1, s) == DAINX_K_EINVAL, "embedding_influence layout");
    EXPECT(dainx_k_entity_importance(f, f, i, 4, 0, 8, s) == DAINX_K_EINVAL, "entity order 0");
    EXPECT(dainx_k_sample_alias(i, i, i, 4, 2, 2, 8, 1, 0, s) == DAINX_K_EINVAL, "sample col = order");
    EXPECT(dainx_k_sample_alias(i, i, i, 4, 2, 0, 0, 1, 0, s) == DAINX_K_EINVAL, "sample size 0");
    // Empty batches queue nothing.
    EXPECT(dainx_k_gather(nullptr, nullptr, nullptr, 0, 2, 4, 8, 0, s) == 0, "gather empty");
    EXPECT(dainx_k_linear_forward(nullptr, nullptr, nullptr, nullptr, 0, 8, 8, 0, 0, nullptr, 0, s) == 0, "forward empty");
    EXPECT(dainx_k_adam(nullptr, nullptr, nullptr, nullptr, 0, 1e-3, 0.9, 0.999, 1e-8, 1, s) == 0, "adam empty");
    EXPECT(dainx_k_influence_dot_scratch_bytes(4, 8, 4) == 0, "influence scratch, direct path");
    EXPECT(dainx_k_influence_dot_scratch_bytes(100, 8, 64) == 4 * 100 * 64, "influence scratch, wide path");
    // Valid calls: 0 with a GPU, a CUDA error (positive) without.
    int rcs[] = {
        dainx_k_gather(f, f, i, 4, 2, 4, 8, 0, s),
        dainx_k_linear_forward(f, f, f, f, 4, 8, 1, 1, 0, nullptr, 0, s),
        dainx_k_mse_grad(f, f, f, f, 4, 0.5f, s),
        dainx_k_adam(f, f, f, f, 4, 1e-3, 0.9, 0.999, 1e-8, 1, s),
        dainx_k_sample_alias(i, i, i, 4, 2, 1, 8, 1, 0, s),
    };
    for (int rc : rcs) EXPECT(gpu ? rc == 0 : rc > 0, gpu ? "valid call on the GPU" : "valid call without a device");
    if (!gpu) std::printf("args_test: no CUDA device (%s); valid calls return it\n", dainx_k_strerror(rcs[0]));
    if (gpu) EXPECT(cudaDeviceSynchronize() == cudaSuccess, "synchronize");
    if (fails) return 1;
    std::printf("args_test: launcher argument checks OK\n");
    return 0;
}
