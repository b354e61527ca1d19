// train_step.cu: one training step of dainx's default MLP through
// libdainx_kernels, checked against a plain C++ implementation on the CPU.
//
//   make kernels-lib examples-cuda
//   build/examples/cuda/train_step [fp32|tf32|3xtf32]
//
// The model is DAIN's (eq. 4) for an order-3 tensor: an embedding table per
// mode (width 50), concatenated (150), then Linear+ReLU 150→1024→1024→128
// and Linear 128→1; loss MSE (eq. 1); Adam (lr 1e-3) on every parameter,
// embeddings included. One batch of 256 random cells: gather, four forward
// layers, mse_grad, four backward layers, scatter_rows, adam. It prints the
// loss and the largest relative gradient error against the CPU, and exits 1
// if they disagree. Without a GPU it says so and exits 0.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <dainx_kernels.h>

#define CK(call)                                                                               \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        if (rc_ != 0) {                                                                        \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, dainx_k_strerror(rc_)); \
            std::exit(1);                                                                      \
        }                                                                                      \
    } while (0)

typedef std::vector<float> Vec;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(float a) {  // U(-a, a), xorshift64*
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return a * (2.0f * (float)((rng * 2685821657736338717ull) >> 40) / (float)(1 << 24) - 1.0f);
}

// ---- the CPU reference (row-major, PyTorch's Linear layout w O×I) ----

static void cpu_forward(Vec& y, const Vec& x, const Vec& w, const Vec& b, int B, int I, int O, bool relu) {
    y.assign((size_t)B * O, 0);
    for (int r = 0; r < B; r++)
        for (int o = 0; o < O; o++) {
            double s = b[o];
            for (int i = 0; i < I; i++) s += (double)x[(size_t)r * I + i] * w[(size_t)o * I + i];
            float v = (float)s;
            y[(size_t)r * O + o] = relu && v < 0 ? 0 : v;
        }
}

static void cpu_backward(Vec* dx, Vec& dw, Vec& db, const Vec& dy, const Vec& x, const Vec& w, int B, int I, int O,
                         bool mask) {
    dw.assign((size_t)O * I, 0), db.assign(O, 0);
    std::vector<double> acc((size_t)O * I, 0), accb(O, 0);
    for (int r = 0; r < B; r++)
        for (int o = 0; o < O; o++) {
            double g = dy[(size_t)r * O + o];
            accb[o] += g;
            for (int i = 0; i < I; i++) acc[(size_t)o * I + i] += g * x[(size_t)r * I + i];
        }
    for (size_t k = 0; k < acc.size(); k++) dw[k] = (float)acc[k];
    for (int o = 0; o < O; o++) db[o] = (float)accb[o];
    if (!dx) return;
    dx->assign((size_t)B * I, 0);
    for (int r = 0; r < B; r++)
        for (int i = 0; i < I; i++) {
            double s = 0;
            for (int o = 0; o < O; o++) s += (double)dy[(size_t)r * O + o] * w[(size_t)o * I + i];
            (*dx)[(size_t)r * I + i] = mask && !(x[(size_t)r * I + i] > 0) ? 0 : (float)s;
        }
}

static double rel_err(const Vec& a, const Vec& b) {
    double num = 0, den = 0;
    for (size_t k = 0; k < a.size(); k++) num += (a[k] - b[k]) * (double)(a[k] - b[k]), den += (double)b[k] * b[k];
    return std::sqrt(num / (den > 0 ? den : 1));
}

// ---- device helpers ----

static float* dev(const Vec& h) {
    float* p;
    if (cudaMalloc(&p, h.size() * 4) != cudaSuccess) std::exit(1);
    cudaMemcpy(p, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
    return p;
}
static Vec host(const float* p, size_t n) {
    Vec h(n);
    cudaMemcpy(h.data(), p, n * 4, cudaMemcpyDeviceToHost);
    return h;
}

int main(int argc, char** argv) {
    int prec = DAINX_K_FP32;
    double tol = 1e-4;  // fp32: summation order only
    if (argc > 1 && !std::strcmp(argv[1], "tf32")) prec = DAINX_K_TF32, tol = 2e-2;
    if (argc > 1 && !std::strcmp(argv[1], "3xtf32")) prec = DAINX_K_3XTF32, tol = 1e-4;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::printf("train_step: no CUDA device; skipping (compiled and linked fine)\n");
        return 0;
    }
    cudaStream_t st;
    cudaStreamCreate(&st);

    const int N = 3, E = 50, D = 100, R = N * D, B = 256;
    const int L = 4, width[L + 1] = {N * E, 1024, 1024, 128, 1};
    const double lr = 1e-3;

    // Parameters (PyTorch-like uniform init) and a batch of cells.
    Vec table((size_t)R * E);
    for (auto& v : table) v = uniform(1.0f);
    Vec W[L], Bs[L];
    for (int l = 0; l < L; l++) {
        float a = 1.0f / std::sqrt((float)width[l]);
        W[l].resize((size_t)width[l + 1] * width[l]), Bs[l].resize(width[l + 1]);
        for (auto& v : W[l]) v = uniform(a);
        for (auto& v : Bs[l]) v = uniform(a);
    }
    std::vector<int32_t> cells((size_t)B * N);
    Vec y(B);
    for (int b = 0; b < B; b++) {
        for (int n = 0; n < N; n++) cells[(size_t)b * N + n] = n * D + (int)((uniform(1) + 1) * 0.5f * (D - 1));
        y[b] = 1.0f + uniform(0.5f);
    }

    // ---- GPU: one step ----
    float *dTable = dev(table), *dW[L], *dB[L], *dGW[L], *dGB[L], *dH[L + 1], *dD[L + 1];
    for (int l = 0; l < L; l++) {
        dW[l] = dev(W[l]), dB[l] = dev(Bs[l]);
        dGW[l] = dev(Vec(W[l].size())), dGB[l] = dev(Vec(Bs[l].size()));
    }
    for (int l = 0; l <= L; l++) dH[l] = dev(Vec((size_t)B * width[l])), dD[l] = dev(Vec((size_t)B * width[l]));
    int32_t* dCells;
    cudaMalloc(&dCells, cells.size() * 4);
    cudaMemcpy(dCells, cells.data(), cells.size() * 4, cudaMemcpyHostToDevice);
    float *dY = dev(y), *dSq = dev(Vec(1)), *dGTable = dev(Vec(table.size()));

    size_t need = 0;
    for (int l = 0; l < L; l++) {
        need = std::max(need, dainx_k_linear_forward_scratch_bytes(B, width[l], width[l + 1]));
        need = std::max(need, dainx_k_linear_backward_scratch_bytes(B, width[l], width[l + 1], 1, 1, 1));
    }
    void* scratch = nullptr;
    if (need) cudaMalloc(&scratch, need);

    CK(dainx_k_gather(dH[0], dTable, dCells, B, N, E, R, DAINX_K_MODE_MAJOR, st));
    for (int l = 0; l < L; l++)
        CK(dainx_k_linear_forward(dH[l + 1], dH[l], dW[l], dB[l], B, width[l], width[l + 1], l < L - 1, prec, scratch,
                                  need, st));
    CK(dainx_k_mse_grad(dD[L], dSq, dH[L], dY, B, 2.0f / B, st));
    for (int l = L - 1; l >= 0; l--)
        CK(dainx_k_linear_backward(dD[l], dGW[l], dGB[l], dD[l + 1], dH[l], dW[l], B, width[l], width[l + 1],
                                   /*mask_x=*/l > 0, /*accumulate=*/0, prec, scratch, need, st));
    CK(dainx_k_scatter_rows(dGTable, dD[0], dCells, B, N, E, R, DAINX_K_MODE_MAJOR, st));
    // Gradients before Adam, for the check.
    cudaStreamSynchronize(st);
    Vec gW[L], gB[L];
    for (int l = 0; l < L; l++) gW[l] = host(dGW[l], W[l].size()), gB[l] = host(dGB[l], Bs[l].size());
    Vec gTable = host(dGTable, table.size());
    float sq = host(dSq, 1)[0];
    std::vector<float*> m, v;
    auto adam = [&](float* p, float* g, size_t n) {
        float *mm = dev(Vec(n)), *vv = dev(Vec(n));
        m.push_back(mm), v.push_back(vv);
        CK(dainx_k_adam(p, g, mm, vv, (int32_t)n, lr, 0.9, 0.999, 1e-8, 1, st));
    };
    for (int l = 0; l < L; l++) adam(dW[l], dGW[l], W[l].size()), adam(dB[l], dGB[l], Bs[l].size());
    adam(dTable, dGTable, table.size());
    if (cudaStreamSynchronize(st) != cudaSuccess) {
        std::fprintf(stderr, "train_step: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
    }

    // ---- CPU reference ----
    Vec H[L + 1], Dl[L + 1], cW[L], cB[L];
    H[0].resize((size_t)B * N * E);
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++)
            std::memcpy(&H[0][((size_t)b * N + n) * E], &table[(size_t)cells[(size_t)b * N + n] * E], E * 4);
    for (int l = 0; l < L; l++) cpu_forward(H[l + 1], H[l], W[l], Bs[l], B, width[l], width[l + 1], l < L - 1);
    double csq = 0;
    Dl[L].resize(B);
    for (int b = 0; b < B; b++) {
        double e = (double)H[L][b] - y[b];
        csq += e * e;
        Dl[L][b] = (float)(2.0 / B * e);
    }
    for (int l = L - 1; l >= 0; l--)
        cpu_backward(&Dl[l], cW[l], cB[l], Dl[l + 1], H[l], W[l], B, width[l], width[l + 1], l > 0);
    Vec cTable(table.size(), 0);
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++)
            for (int e = 0; e < E; e++)
                cTable[(size_t)cells[(size_t)b * N + n] * E + e] += Dl[0][((size_t)b * N + n) * E + e];

    double worst = std::fabs(sq - csq) / csq;
    std::printf("train_step (%s): loss %.6f (CPU %.6f)\n", argc > 1 ? argv[1] : "fp32", sq / B, csq / B);
    for (int l = 0; l < L; l++) {
        double ew = rel_err(gW[l], cW[l]), eb = rel_err(gB[l], cB[l]);
        std::printf("  layer %d %4d->%-4d  dW rel. err %.2e  db rel. err %.2e\n", l + 1, width[l], width[l + 1], ew, eb);
        worst = std::max(worst, std::max(ew, eb));
    }
    double et = rel_err(gTable, cTable);
    std::printf("  embeddings          dE rel. err %.2e\n", et);
    worst = std::max(worst, et);
    // Adam moved every parameter by about lr against the sign of its
    // gradient: check the updated first layer against p − lr·sign(g).
    Vec w1 = host(dW[0], W[0].size());
    size_t off = 0;
    for (size_t k = 0; k < w1.size(); k++) {
        double want = W[0][k] - (cW[0][k] > 0 ? lr : cW[0][k] < 0 ? -lr : 0);
        if (std::fabs(cW[0][k]) > 1e-5 && std::fabs(w1[k] - want) > 1e-5) off++;
    }
    std::printf("  adam: %zu of %zu first-layer weights off p - lr*sign(g)\n", off, w1.size());
    bool ok = worst < tol && off == 0;
    std::printf("train_step: %s (largest relative error %.2e, tolerance %.0e)\n", ok ? "OK" : "MISMATCH", worst, tol);
    return ok ? 0 : 1;
}
