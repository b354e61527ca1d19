// emu_test.cpp: runs every kernel of kernels/ under the host emulation of
// shim.h on small random cases and compares it with a float64 loop (the
// semantics of compute/ref), checks Philox against Random123's known answers
// and sample_alias against draws of compute.AliasDraw; the sparse kernels
// (distinct_rows, compact_rows, sparse_adam) bit for bit against host loops,
// adam_at and sparse_adam_at bit for bit against adam and sparse_adam, the
// L2 of all four against adam on g + l2·p formed on the host; the pairwise
// kernels (pairwise_forward, pairwise_backward) against float64 loops and
// bit for bit against host loops in their documented order.
// See run.sh.
#include "adam.cu"
#include "adam_at.cu"
#include "compact_rows.cu"
#include "distinct_rows.cu"
#include "embedding_influence.cu"
#include "entity_importance.cu"
#include "gather.cu"
#include "influence_dot.cu"
#include "influence_rows.cu"
#include "linear_backward_db.cu"
#include "linear_backward_dw.cu"
#include "linear_backward_dw_tc.cu"
#include "linear_backward_dx.cu"
#include "linear_backward_dx_tc.cu"
#include "linear_backward_out1.cu"
#include "linear_backward_dw_128x128.cu"
#include "linear_backward_dw_128x64.cu"
#include "linear_backward_dw_tc_128x128.cu"
#include "linear_backward_dw_tc_128x64.cu"
#include "linear_backward_dx_128x128.cu"
#include "linear_backward_dx_128x64.cu"
#include "linear_backward_dx_tc_128x128.cu"
#include "linear_backward_dx_tc_128x64.cu"
#include "linear_forward_128x128.cu"
#include "linear_forward_128x64.cu"
#include "linear_forward_tc_128x128.cu"
#include "linear_forward_tc_128x64.cu"
#include "linear_forward.cu"
#include "linear_forward_out1.cu"
#include "linear_forward_out1_mse.cu"
#include "linear_forward_tc.cu"
#include "mse_grad.cu"
#include "mul.cu"
#include "pairwise_backward.cu"
#include "pairwise_forward.cu"
#include "sample_alias.cu"
#include "scatter_rows.cu"
#include "sparse_adam.cu"
#include "sparse_adam_at.cu"
#include "split_k_reduce.cu"
#include <cstdio>
#include <random>
#include <string>
#include <cstdlib>
#include <numeric>
using namespace std;
static mt19937 rng(1);
static vector<float> rnd(size_t n) { uniform_real_distribution<float> d(-1, 1); vector<float> v(n); for (auto& x : v) x = d(rng); return v; }
static int fails = 0;
static void check(const char* what, const vector<float>& got, const vector<double>& want, double tol = 1e-4) {
    int bad = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        double e = fabs(got[i] - want[i]);
        if (!(e <= tol * (1 + fabs(want[i])))) { if (bad++ < 3) printf("  %s: [%zu] got %g want %g\n", what, i, got[i], want[i]); }
    }
    if (bad) { printf("FAIL %s: %d/%zu bad\n", what, bad, want.size()); fails++; }
}
static unsigned cdiv(long a, long b) { return (unsigned)((a + b - 1) / b); }
// tf32r returns v rounded to TF32 as cvt.rna does, for the TF32 references.
static float tf32r(float v) { uint32_t u = emu_tf32(v); float r; memcpy(&r, &u, 4); return r; }

// testTC checks the tensor-core kernels (linear_*_tc) on one shape. In TF32
// mode the float64 reference uses the operands rounded to TF32, so that
// only the float32 accumulation separates the two and the tolerance stays
// 1e-4: a fragment element read from the wrong place, or not rounded, fails.
// In 3xTF32 mode the reference uses the float32 operands themselves, at the
// same tolerance, which plain TF32 (error about 2^-11 per product) fails.
// With off = 1 the operands start one float past a 16-byte boundary (the
// 4-byte copy path even when the widths are multiples of 4).
static void testTC(int B, int I, int O, int off, mt19937& g) {
    // Operands live in buffers 16-byte aligned at element 0, viewed from element off.
    struct Buf { vector<float> v; int off; float* data() { return v.data() + off; } float& operator[](size_t i) { return v[off + i]; } size_t size() const { return v.size() - off; } };
    auto rndv = [&](size_t n) { uniform_real_distribution<float> d(-1, 1); Buf b{vector<float>(n + 4), off}; for (auto& x : b.v) x = d(g); return b; };
    auto x = rndv((size_t)B * I), w = rndv((size_t)O * I), bias = rndv(O), dy = rndv((size_t)B * O);
    for (size_t i = 0; i < x.size(); i += 3) x[i] = 0;
    char buf[160];
    for (int x3 = 0; x3 < 2; ++x3) {
        auto R = [&](float v) { return x3 ? (double)v : (double)tf32r(v); };
        int fx = x3 ? 16 : 0;
        // forward, ReLU
        vector<double> want((size_t)B * O);
        for (int b = 0; b < B; ++b) for (int o = 0; o < O; ++o) { double t = 0; for (int i = 0; i < I; ++i) t += R(x[b * I + i]) * R(w[o * I + i]); t += bias[o]; want[b * O + o] = t < 0 ? 0 : t; }
        for (int kchunk : {I, 48, 18}) {
            int parts = cdiv(I, kchunk);
            vector<float> y((size_t)B * O, NAN), part((size_t)parts * B * O, NAN);
            launch({cdiv(B, 64), cdiv(O, 64), (unsigned)parts}, {128, 1, 1}, [&] { linear_forward_tc(y.data(), part.data(), x.data(), w.data(), bias.data(), B, I, O, kchunk, 2 | fx); });
            if (parts > 1) launch({3, 1, 1}, {256, 1, 1}, [&] { split_k_reduce(y.data(), nullptr, part.data(), bias.data(), nullptr, B, O, O, parts, 2); });
            snprintf(buf, sizeof buf, "linear_forward_tc x3 %d %dx%dx%d off %d chunk %d", x3, B, I, O, off, kchunk); check(buf, y, want);
        }
        // dx, mask
        vector<double> wdx((size_t)B * I);
        for (int b = 0; b < B; ++b) for (int i = 0; i < I; ++i) { double t = 0; for (int o = 0; o < O; ++o) t += R(dy[b * O + o]) * R(w[o * I + i]); wdx[b * I + i] = x[b * I + i] > 0 ? t : 0; }
        for (int kchunk : {O, 16, 18}) {
            int parts = cdiv(O, kchunk);
            vector<float> dx((size_t)B * I, NAN), part((size_t)parts * B * I, NAN);
            launch({cdiv(B, 64), cdiv(I, 64), (unsigned)parts}, {128, 1, 1}, [&] { linear_backward_dx_tc(dx.data(), part.data(), dy.data(), w.data(), x.data(), B, I, O, kchunk, 4 | fx); });
            if (parts > 1) launch({3, 1, 1}, {256, 1, 1}, [&] { split_k_reduce(dx.data(), nullptr, part.data(), nullptr, x.data(), B, I, I, parts, 4); });
            snprintf(buf, sizeof buf, "linear_backward_dx_tc x3 %d %dx%dx%d off %d chunk %d", x3, B, I, O, off, kchunk); check(buf, dx, wdx);
        }
        // dw and db, accumulate (db is summed in float32 from the staged dy, unrounded)
        vector<double> wdw((size_t)O * I), wdb(O);
        for (int o = 0; o < O; ++o) { double tb = 1; for (int b = 0; b < B; ++b) tb += dy[b * O + o]; wdb[o] = tb; for (int i = 0; i < I; ++i) { double t = 1; for (int b = 0; b < B; ++b) t += R(dy[b * O + o]) * R(x[b * I + i]); wdw[o * I + i] = t; } }
        for (int kchunk : {B, 48, 18}) for (int withb = 0; withb < 2; ++withb) {
            int parts = cdiv(B, kchunk), P = I + withb;
            vector<float> dw((size_t)O * I, 1.f), db(O, 1.f), part((size_t)parts * O * P, NAN);
            launch({cdiv(O, 64), cdiv(I, 64), (unsigned)parts}, {128, 1, 1}, [&] { linear_backward_dw_tc(dw.data(), withb ? db.data() : nullptr, part.data(), dy.data(), x.data(), B, I, O, kchunk, 1 | (withb ? 8 : 0) | fx); });
            if (parts > 1) launch({4, 1, 1}, {256, 1, 1}, [&] { split_k_reduce(dw.data(), withb ? db.data() : nullptr, part.data(), nullptr, nullptr, O, I, P, parts, 1); });
            snprintf(buf, sizeof buf, "linear_backward_dw_tc x3 %d %dx%dx%d off %d chunk %d db %d", x3, B, I, O, off, kchunk, withb); check(buf, dw, wdw);
            if (withb) { snprintf(buf, sizeof buf, "linear_backward_dw_tc (db) x3 %d %dx%dx%d off %d chunk %d", x3, B, I, O, off, kchunk); check(buf, db, wdb); }
        }
    }
}

// testFamily checks every member of the GEMM family (kernels/*_128x64.cu,
// *_128x128.cu and their _tc forms) on one shape: each variant's outputs,
// unsplit and split-K (the parts themselves, before split_k_reduce), must
// be bit for bit those of today's 64×64 kernel of the same precision
// (fp32, TF32, 3xTF32), and within the tolerance of check() of a float64
// loop over the operands as that precision rounds them. Variant k of a
// precision is launched with its own grid, block and tile.
struct Tile { unsigned bm, bn, threads; };
static void testFamily(int B, int I, int O, int off, mt19937& g) {
    struct Buf { vector<float> v; int off; float* data() { return v.data() + off; } float& operator[](size_t i) { return v[off + i]; } size_t size() const { return v.size() - off; } };
    auto rndv = [&](size_t n) { uniform_real_distribution<float> d(-1, 1); Buf b{vector<float>(n + 4), off}; for (auto& x : b.v) x = d(g); return b; };
    auto x = rndv((size_t)B * I), w = rndv((size_t)O * I), bias = rndv(O), dy = rndv((size_t)B * O);
    for (size_t i = 0; i < x.size(); i += 3) x[i] = 0;
    char buf[200];
    auto same = [&](const char* what, const vector<float>& got, const vector<float>& want) {
        if (got.size() != want.size() || memcmp(got.data(), want.data(), 4 * got.size()) != 0) {
            size_t i = 0;
            while (i < got.size() && memcmp(&got[i], &want[i], 4) == 0) ++i;
            printf("FAIL %s: not bit-identical to the 64x64 kernel (first at [%zu]: %a vs %a)\n", what, i, got[i], want[i]);
            fails++;
        }
    };
    typedef void (*Fwd)(float*, float*, const float*, const float*, const float*, int32_t, int32_t, int32_t, int32_t, int32_t);
    typedef void (*Dx)(float*, float*, const float*, const float*, const float*, int32_t, int32_t, int32_t, int32_t, int32_t);
    typedef void (*Dw)(float*, float*, float*, const float*, const float*, int32_t, int32_t, int32_t, int32_t, int32_t);
    struct Member { const char* name; Tile t; Fwd fwd; Dx dx; Dw dw; };
    // prec 0: fp32 SIMT, 1: TF32, 2: 3xTF32 (the _tc kernels with kEpiX3).
    const Member fam[2][3] = {
        {{"64x64", {64, 64, 256}, linear_forward, linear_backward_dx, linear_backward_dw},
         {"128x64", {128, 64, 128}, linear_forward_128x64, linear_backward_dx_128x64, linear_backward_dw_128x64},
         {"128x128", {128, 128, 256}, linear_forward_128x128, linear_backward_dx_128x128, linear_backward_dw_128x128}},
        {{"tc_64x64", {64, 64, 128}, linear_forward_tc, linear_backward_dx_tc, linear_backward_dw_tc},
         {"tc_128x64", {128, 64, 256}, linear_forward_tc_128x64, linear_backward_dx_tc_128x64, linear_backward_dw_tc_128x64},
         {"tc_128x128", {128, 128, 256}, linear_forward_tc_128x128, linear_backward_dx_tc_128x128, linear_backward_dw_tc_128x128}}};
    // serialSplit: the variant's serial split-K (kEpiSerial, splitk.cuh) in
    // one kernel against the two-kernel split's parts (yp, dxp, dwp)
    // reduced by split_k_reduce with the same epilogue (forward: bias and
    // ReLU; dx: the mask; dw: db and accumulation into earlier values), bit
    // for bit, and every semaphore back at zero.
    auto serialSplit = [&](const Member& m, dim3 blk, const vector<float>& yp, const vector<float>& dxp, const vector<float>& dwp,
                           int pf, int px, int pw, int cf, int cx, int cw, int fx) {
        auto run = [&](const char* op, dim3 grid, size_t n, auto kernel) {
            const size_t nt = (size_t)grid.x * grid.y;
            vector<float> wsp(nt + n, NAN);
            fill(wsp.begin(), wsp.begin() + nt, 0.f);
            launch(grid, blk, [&] { kernel(wsp.data() + nt); });
            for (size_t t = 0; t < nt; ++t)
                if (wsp[t] != 0.f) { printf("FAIL serial split-K %s %s: semaphore %zu left at %u\n", m.name, op, t, *(uint32_t*)&wsp[t]); fails++; break; }
        };
        auto same2 = [&](const char* op, const vector<float>& got, const vector<float>& want) {
            if (memcmp(got.data(), want.data(), 4 * got.size()) != 0) {
                size_t i = 0;
                while (memcmp(&got[i], &want[i], 4) == 0) ++i;
                printf("FAIL serial split-K %s fx %d %dx%dx%d %s: not the bits of split_k_reduce (first at [%zu]: %a vs %a)\n", m.name, fx, B, I, O, op, i, got[i], want[i]);
                fails++;
            }
        };
        const dim3 r1{7, 1, 1}, rb{256, 1, 1};
        if (pf > 1) {
            vector<float> want((size_t)B * O, NAN), got((size_t)B * O, NAN);
            launch(r1, rb, [&] { split_k_reduce(want.data(), nullptr, yp.data(), bias.data(), nullptr, B, O, O, pf, 2); });
            run("forward", {cdiv(B, m.t.bm), cdiv(O, m.t.bn), (unsigned)pf}, (size_t)B * O,
                [&](float* ws) { m.fwd(got.data(), ws, x.data(), w.data(), bias.data(), B, I, O, cf, 2 | 32 | fx); });
            same2("forward", got, want);
        }
        if (px > 1) {
            vector<float> want((size_t)B * I, NAN), got((size_t)B * I, NAN);
            launch(r1, rb, [&] { split_k_reduce(want.data(), nullptr, dxp.data(), nullptr, x.data(), B, I, I, px, 4); });
            run("dx", {cdiv(B, m.t.bm), cdiv(I, m.t.bn), (unsigned)px}, (size_t)B * I,
                [&](float* ws) { m.dx(got.data(), ws, dy.data(), w.data(), x.data(), B, I, O, cx, 4 | 32 | fx); });
            same2("dx", got, want);
        }
        if (pw > 1) {
            const Buf d0 = rndv((size_t)O * I), b0 = rndv(O);
            vector<float> want(d0.v.begin() + off, d0.v.begin() + off + (size_t)O * I), wantb(b0.v.begin() + off, b0.v.begin() + off + O);
            vector<float> got = want, gotb = wantb;
            launch(r1, rb, [&] { split_k_reduce(want.data(), wantb.data(), dwp.data(), nullptr, nullptr, O, I, I + 1, pw, 1); });
            run("dw", {cdiv(O, m.t.bm), cdiv(I, m.t.bn), (unsigned)pw}, (size_t)O * (I + 1),
                [&](float* ws) { m.dw(got.data(), gotb.data(), ws, dy.data(), x.data(), B, I, O, cw, 8 | 1 | 32 | fx); });
            same2("dw", got, want);
            same2("db", gotb, wantb);
        }
    };
    for (int prec = 0; prec < 3; ++prec) {
        const Member* ms = fam[prec == 0 ? 0 : 1];
        const int fx = prec == 2 ? 16 : 0;
        auto R = [&](float v) { return prec == 1 ? (double)tf32r(v) : (double)v; };
        // float64 references: forward with ReLU, dx with the mask, dw and db.
        vector<double> wy((size_t)B * O), wdx((size_t)B * I), wdw((size_t)O * I), wdb(O);
        for (int b = 0; b < B; ++b) for (int o = 0; o < O; ++o) { double t = bias[o]; for (int i = 0; i < I; ++i) t += R(x[b * I + i]) * R(w[o * I + i]); wy[b * O + o] = t < 0 ? 0 : t; }
        for (int b = 0; b < B; ++b) for (int i = 0; i < I; ++i) { double t = 0; for (int o = 0; o < O; ++o) t += R(dy[b * O + o]) * R(w[o * I + i]); wdx[b * I + i] = x[b * I + i] > 0 ? t : 0; }
        for (int o = 0; o < O; ++o) { double tb = 0; for (int b = 0; b < B; ++b) tb += dy[b * O + o]; wdb[o] = tb; for (int i = 0; i < I; ++i) { double t = 0; for (int b = 0; b < B; ++b) t += R(dy[b * O + o]) * R(x[b * I + i]); wdw[o * I + i] = t; } }
        for (int split = 0; split < 2; ++split) {
            const int cf = split ? 32 : I, cx = split ? 32 : O, cw = split ? 48 : B;
            const int pf = cdiv(I, cf), px = cdiv(O, cx), pw = cdiv(B, cw);
            vector<float> y0, dx0, dw0, db0;
            for (int v = 0; v < 3; ++v) {
                const Member& m = ms[v];
                const dim3 blk{m.t.threads, 1, 1};
                vector<float> y((size_t)B * O, NAN), yp((size_t)pf * B * O, NAN);
                launch({cdiv(B, m.t.bm), cdiv(O, m.t.bn), (unsigned)pf}, blk, [&] { m.fwd(y.data(), yp.data(), x.data(), w.data(), bias.data(), B, I, O, cf, 2 | fx); });
                if (pf > 1) { y = yp; }
                vector<float> dx((size_t)B * I, NAN), dxp((size_t)px * B * I, NAN);
                launch({cdiv(B, m.t.bm), cdiv(I, m.t.bn), (unsigned)px}, blk, [&] { m.dx(dx.data(), dxp.data(), dy.data(), w.data(), x.data(), B, I, O, cx, 4 | fx); });
                if (px > 1) { dx = dxp; }
                vector<float> dw((size_t)O * I, NAN), db(O, NAN), dwp((size_t)pw * O * (I + 1), NAN);
                launch({cdiv(O, m.t.bm), cdiv(I, m.t.bn), (unsigned)pw}, blk, [&] { m.dw(dw.data(), db.data(), dwp.data(), dy.data(), x.data(), B, I, O, cw, 8 | fx); });
                if (pw > 1) { dw = dwp; db.clear(); }
                if (split && !(prec == 0 && v == 0)) serialSplit(m, blk, yp, dxp, dwp, pf, px, pw, cf, cx, cw, fx);
                if (!split) {
                    snprintf(buf, sizeof buf, "family %s prec %d %dx%dx%d off %d forward", m.name, prec, B, I, O, off); check(buf, y, wy);
                    snprintf(buf, sizeof buf, "family %s prec %d %dx%dx%d off %d dx", m.name, prec, B, I, O, off); check(buf, dx, wdx);
                    snprintf(buf, sizeof buf, "family %s prec %d %dx%dx%d off %d dw", m.name, prec, B, I, O, off); check(buf, dw, wdw);
                    snprintf(buf, sizeof buf, "family %s prec %d %dx%dx%d off %d db", m.name, prec, B, I, O, off); check(buf, db, wdb);
                }
                if (v == 0) { y0 = y; dx0 = dx; dw0 = dw; db0 = db; continue; }
                snprintf(buf, sizeof buf, "family %s prec %d %dx%dx%d off %d split %d forward", m.name, prec, B, I, O, off, split); same(buf, y, y0);
                snprintf(buf, sizeof buf, "family %s prec %d %dx%dx%d off %d split %d dx", m.name, prec, B, I, O, off, split); same(buf, dx, dx0);
                snprintf(buf, sizeof buf, "family %s prec %d %dx%dx%d off %d split %d dw+db", m.name, prec, B, I, O, off, split); same(buf, dw, dw0); same(buf, db, db0);
            }
        }
    }
}

// distinctRef is compute/ref.DistinctRows: a stable sort of the positions
// by row, then the first position of each run.
struct Distinct { vector<int32_t> rows, starts, perm; int u; };
static Distinct distinctRef(const vector<int32_t>& cells) {
    int K = (int)cells.size();
    Distinct d{{}, {}, vector<int32_t>(K), 0};
    iota(d.perm.begin(), d.perm.end(), 0);
    stable_sort(d.perm.begin(), d.perm.end(), [&](int32_t a, int32_t b) { return cells[a] < cells[b]; });
    for (int j = 0; j < K; ++j)
        if (j == 0 || cells[d.perm[j]] != cells[d.perm[j - 1]]) { d.rows.push_back(cells[d.perm[j]]); d.starts.push_back(j); }
    d.u = (int)d.rows.size();
    d.starts.push_back(K);
    return d;
}

// testDistinct runs distinct_rows on cells (scratch keys when the padded
// length exceeds 4096, as the Go backend passes them) and compares every
// output with distinctRef exactly; rows[U:] and starts[U+1:] must keep
// their sentinel. grid > 1 checks that the other blocks do nothing.
static void testDistinct(const char* what, const vector<int32_t>& cells, unsigned grid = 1) {
    int K = (int)cells.size(), P = 1;
    while (P < K) P <<= 1;
    const int32_t sent = -7;
    vector<int32_t> rows(K, sent), starts(K + 1, sent), perm(K, sent), count(1, sent);
    vector<uint64_t> keys(P > 4096 ? P : 0, 0x5555555555555555ull);
    uint32_t* kp = P > 4096 ? reinterpret_cast<uint32_t*>(keys.data()) : nullptr;
    launch({grid, 1, 1}, {1024, 1, 1}, [&] { distinct_rows(rows.data(), starts.data(), perm.data(), count.data(), kp, cells.data(), K); });
    Distinct d = distinctRef(cells);
    vector<int32_t> wr = d.rows, ws = d.starts;
    wr.resize(K, sent);
    ws.resize(K + 1, sent);
    int bad = 0;
    auto cmp = [&](const char* name, const vector<int32_t>& got, const vector<int32_t>& want) {
        for (size_t i = 0; i < want.size(); ++i)
            if (got[i] != want[i]) { if (bad++ < 3) printf("  distinct_rows %s K %d: %s[%zu] = %d, want %d\n", what, K, name, i, got[i], want[i]); }
    };
    cmp("count", count, {d.u});
    cmp("rows", rows, wr);
    cmp("starts", starts, ws);
    cmp("perm", perm, d.perm);
    if (bad) { printf("FAIL distinct_rows %s K %d (U %d): %d wrong\n", what, K, d.u, bad); fails++; }
}

// testSparse checks the sparse embedding-gradient kernels, each bit for bit:
// distinct_rows against a stable sort, compact_rows against the float32 sum
// in increasing j from 0 (both layouts), sparse_adam against adam run on
// each listed row alone.
static void testSparse() {
    mt19937 g(11);
    // distinct_rows: K = 0, 1, 7, 1000, 3072 (shared memory), 4096 (a full
    // tile), 4097 and 20000 (tiles in shared memory, merges through the
    // scratch keys); few rows, and rows up to 2³⁰ (and 2³¹−1) with repeats;
    // up to K = 4097 also those sorted, reverse-sorted, one row, all
    // distinct.
    for (int K : {0, 1, 7, 1000, 3072, 4096, 4097, 20000}) {
        vector<int32_t> few(K), wide(K);
        for (int i = 0; i < K; ++i) { few[i] = (int32_t)(g() % 3); wide[i] = (int32_t)(g() % (1u << 30)); }
        for (int i = 5; i < K; i += 7) wide[i] = wide[g() % i];  // repeats
        if (K > 1) { wide[K - 1] = wide[0]; wide[1] = 2147483647; }
        if (K > 2) wide[2] = 1 << 30;
        vector<int32_t> sorted = wide;
        sort(sorted.begin(), sorted.end());
        vector<int32_t> rev(sorted.rbegin(), sorted.rend());
        vector<int32_t> one(K, 12345), distinct(K);
        iota(distinct.begin(), distinct.end(), 0);
        shuffle(distinct.begin(), distinct.end(), g);
        testDistinct("few rows", few);
        if (K < 2) continue;
        testDistinct("rows < 2^30", wide);
        if (K > 4097) continue;  // ~10 s each under the emulator
        testDistinct("sorted", sorted);
        testDistinct("reverse-sorted", rev);
        testDistinct("one row", one);
        testDistinct("all distinct", distinct);
    }
    {
        vector<int32_t> c(300);
        for (auto& x : c) x = (int32_t)(g() % 40);
        testDistinct("grid 3", c, 3);
    }

    // compact_rows: K = B·N cells drawn from R rows (so rows repeat), dx with
    // some −0 (a row whose sum is −0 alone must give +0, as 0 + −0), grad
    // rows from U on kept.
    for (int N : {1, 3, 4}) for (int E : {1, 5, 50}) for (int R : {3, 40, 100000}) for (int layout = 0; layout < 2; ++layout) {
        int B = 37, K = B * N;
        vector<int32_t> cells(K);
        for (auto& c : cells) c = (int32_t)(g() % R);
        Distinct d = distinctRef(cells);
        vector<int32_t> starts = d.starts;
        starts.resize(K + 1, 0);
        vector<float> dx((size_t)K * E);
        uniform_real_distribution<float> ud(-1, 1);
        for (auto& x : dx) x = ud(g);
        for (size_t i = 0; i < dx.size(); i += 5) dx[i] = -0.f;
        vector<float> grad((size_t)K * E, -3.f), want = grad;
        for (int u = 0; u < d.u; ++u)
            for (int e = 0; e < E; ++e) {
                float acc = 0.f;
                for (int j = d.starts[u]; j < d.starts[u + 1]; ++j) {
                    int k = d.perm[j], b = k / N, n = k % N;
                    acc += dx[(size_t)b * N * E + (layout ? (size_t)e * N + n : (size_t)n * E + e)];
                }
                want[(size_t)u * E + e] = acc;
            }
        int32_t count = d.u;
        launch({3, 1, 1}, {256, 1, 1}, [&] { compact_rows(grad.data(), dx.data(), starts.data(), d.perm.data(), &count, K, N, E, layout); });
        if (memcmp(grad.data(), want.data(), 4 * grad.size())) {
            size_t i = 0;
            while (!memcmp(&grad[i], &want[i], 4)) ++i;
            printf("FAIL compact_rows N %d E %d R %d layout %d: [%zu] %g, want %g\n", N, E, R, layout, i, grad[i], want[i]); fails++;
        }
    }

    // sparse_adam: the rows a batch touched, against adam on each row; the
    // other rows (and a list entry outside the table) untouched; without
    // and with L2 (which decays the listed rows only).
    for (float l2 : {0.f, 0.05f}) for (int E : {1, 5, 50}) for (int steps = 1; steps <= 3; ++steps) {
        int R = 60, K = 37 * 3;
        vector<int32_t> cells(K);
        for (auto& c : cells) c = (int32_t)(g() % R);
        Distinct d = distinctRef(cells);
        vector<int32_t> rows = d.rows;
        rows.resize(K, 0);
        vector<float> p((size_t)R * E), m(p.size()), v(p.size()), gr((size_t)K * E);
        uniform_real_distribution<float> ud(-1, 1);
        for (auto& x : p) x = ud(g);
        for (auto& x : m) x = ud(g);
        for (auto& x : v) x = fabs(ud(g));
        for (auto& x : gr) x = ud(g);
        vector<float> p2 = p, m2 = m, v2 = v;
        const vector<float> p0 = p, m0 = m, v0 = v;
        double b1 = .9, b2 = .999, lr = 1e-2, eps = 1e-8;
        double c1 = 1 - pow(b1, steps), c2 = 1 - pow(b2, steps);
        float fb1 = b1, fb2 = b2, omb1 = 1 - b1, omb2 = 1 - b2, step = lr / c1, rc2 = 1 / sqrt(c2), feps = eps;
        int32_t count = d.u;
        launch({2, 1, 1}, {256, 1, 1}, [&] { sparse_adam(p.data(), m.data(), v.data(), gr.data(), rows.data(), &count, K, E, R, fb1, fb2, omb1, omb2, step, rc2, feps, l2); });
        // adam on the listed rows gathered into compact copies (it is
        // elementwise), scattered back.
        vector<float> pc((size_t)d.u * E), mc(pc.size()), vc(pc.size());
        for (int u = 0; u < d.u; ++u)
            for (int e = 0; e < E; ++e) {
                size_t i = (size_t)d.rows[u] * E + e, c = (size_t)u * E + e;
                pc[c] = p2[i], mc[c] = m2[i], vc[c] = v2[i];
            }
        launch({2, 1, 1}, {256, 1, 1}, [&] { adam(pc.data(), mc.data(), vc.data(), gr.data(), d.u * E, fb1, fb2, omb1, omb2, step, rc2, feps, l2); });
        for (int u = 0; u < d.u; ++u)
            for (int e = 0; e < E; ++e) {
                size_t i = (size_t)d.rows[u] * E + e, c = (size_t)u * E + e;
                p2[i] = pc[c], m2[i] = mc[c], v2[i] = vc[c];
            }
        if (memcmp(p.data(), p2.data(), 4 * p.size()) || memcmp(m.data(), m2.data(), 4 * m.size()) || memcmp(v.data(), v2.data(), 4 * v.size())) {
            printf("FAIL sparse_adam l2 %g E %d T %d: not adam's bits on the rows\n", l2, E, steps); fails++;
        }
        // sparse_adam_at and adam_at, the constants read from sc when they
        // run: the bits of sparse_adam and adam.
        {
            float sc[2] = {step, rc2};
            vector<float> p3 = p0, m3 = m0, v3 = v0;
            launch({2, 1, 1}, {256, 1, 1}, [&] { sparse_adam_at(p3.data(), m3.data(), v3.data(), gr.data(), rows.data(), &count, sc, K, E, R, fb1, fb2, omb1, omb2, feps, l2); });
            if (memcmp(p.data(), p3.data(), 4 * p.size()) || memcmp(m.data(), m3.data(), 4 * m.size()) || memcmp(v.data(), v3.data(), 4 * v.size())) {
                printf("FAIL sparse_adam_at l2 %g E %d T %d: not sparse_adam's bits\n", l2, E, steps); fails++;
            }
            vector<float> pa = p0, ma = m0, va = v0, pb = p0, mb = m0, vb = v0;
            const int n = (int)min(pa.size(), gr.size());
            launch({2, 1, 1}, {256, 1, 1}, [&] { adam(pa.data(), ma.data(), va.data(), gr.data(), n, fb1, fb2, omb1, omb2, step, rc2, feps, l2); });
            launch({3, 1, 1}, {256, 1, 1}, [&] { adam_at(pb.data(), mb.data(), vb.data(), gr.data(), sc, n, fb1, fb2, omb1, omb2, feps, l2); });
            if (memcmp(pa.data(), pb.data(), 4 * n) || memcmp(ma.data(), mb.data(), 4 * n) || memcmp(va.data(), vb.data(), 4 * n) ||
                !memcmp(pa.data(), p0.data(), 4 * n)) {
                printf("FAIL adam_at l2 %g E %d T %d: not adam's bits\n", l2, E, steps); fails++;
            }
            // L2: adam with l2 is adam without it on g + l2·p, the product
            // and the sum each rounded to float32 (formed here on the
            // host, unfused); adam with l2 = 0 leaves g as it is.
            if (l2 != 0.f) {
                vector<float> gl(n), pc2 = p0, mc2 = m0, vc2 = v0;
                for (int i = 0; i < n; ++i) { volatile float t = l2 * p0[i]; gl[i] = gr[i] + t; }
                launch({2, 1, 1}, {256, 1, 1}, [&] { adam(pc2.data(), mc2.data(), vc2.data(), gl.data(), n, fb1, fb2, omb1, omb2, step, rc2, feps, 0.f); });
                if (memcmp(pa.data(), pc2.data(), 4 * n) || memcmp(ma.data(), mc2.data(), 4 * n) || memcmp(va.data(), vc2.data(), 4 * n)) {
                    printf("FAIL adam l2 %g E %d T %d: not adam's bits on g + l2*p\n", l2, E, steps); fails++;
                }
                vector<float> pz = p0, mz = m0, vz = v0;
                launch({2, 1, 1}, {256, 1, 1}, [&] { adam(pz.data(), mz.data(), vz.data(), gr.data(), n, fb1, fb2, omb1, omb2, step, rc2, feps, 0.f); });
                if (!memcmp(pa.data(), pz.data(), 4 * n)) { printf("FAIL adam l2 %g E %d T %d: L2 changed nothing\n", l2, E, steps); fails++; }
            }
        }
        vector<int32_t> out = {R, -1};
        int32_t two = 2;
        launch({1, 1, 1}, {256, 1, 1}, [&] { sparse_adam(p.data(), m.data(), v.data(), gr.data(), out.data(), &two, 2, E, R, fb1, fb2, omb1, omb2, step, rc2, feps, l2); });
        if (memcmp(p.data(), p2.data(), 4 * p.size())) { printf("FAIL sparse_adam E %d: a row outside the table was updated\n", E); fails++; }
    }
}

// testPairwise checks pairwise_forward and pairwise_backward: against
// float64 loops of the definitions (compute/ref), and bit for bit against
// host loops in the order the kernels document (forward: per lane l the
// factor columns l, l+32, … with a running prefix and fmaf, the lanes added
// by warp_sum's butterfly, then the bias column in increasing n; backward:
// the other modes in increasing n, then fmaf), with grids smaller than the
// batch (stride loops) and larger; every launch of one case gives the same
// bits. B = 0 writes nothing.
static void testPairwise() {
    mt19937 g(23);
    uniform_real_distribution<float> ud(-1, 1);
    char buf[120];
    for (int N : {1, 2, 3, 4, 5}) for (int E : {2, 3, 8, 33, 34, 70}) for (int B : {0, 1, 37}) {
        const int ne = N * E, K = E - 1;
        vector<float> x((size_t)B * ne), dy(B), y0(B), dx0(x.size());
        for (auto& v : x) v = ud(g);
        for (auto& v : dy) v = ud(g);
        for (auto& v : y0) v = ud(g);
        for (auto& v : dx0) v = ud(g);
        // float64 references
        vector<double> wy(B), wdx(x.size());
        for (int b = 0; b < B; ++b) {
            const float* xb = x.data() + (size_t)b * ne;
            double s = y0[b];
            for (int n = 0; n < N; ++n) {
                s += xb[n * E + K];
                for (int n2 = n + 1; n2 < N; ++n2) for (int k = 0; k < K; ++k) s += (double)xb[n * E + k] * xb[n2 * E + k];
            }
            wy[b] = s;
            for (int n = 0; n < N; ++n) for (int e = 0; e < E; ++e) {
                double t = 0;
                if (e == K) t = 1;
                else for (int n2 = 0; n2 < N; ++n2) if (n2 != n) t += xb[n2 * E + e];
                wdx[(size_t)b * ne + n * E + e] = dx0[(size_t)b * ne + n * E + e] + (double)dy[b] * t;
            }
        }
        // host loops in the kernels' order
        vector<float> hy = y0, hdx = dx0;
        for (int b = 0; b < B; ++b) {
            const float* xb = x.data() + (size_t)b * ne;
            float lanes[32];
            for (int l = 0; l < 32; ++l) {
                float s = 0.f;
                for (int f = l; f < K; f += 32) {
                    float p = xb[f];
                    for (int n = 1; n < N; ++n) { const float v = xb[n * E + f]; s = fmaf(v, p, s); p += v; }
                }
                lanes[l] = s;
            }
            for (int o = 16; o > 0; o >>= 1) {
                float t[32];
                for (int l = 0; l < 32; ++l) t[l] = lanes[l] + lanes[l ^ o];
                memcpy(lanes, t, sizeof t);
            }
            float bias = 0.f;
            for (int n = 0; n < N; ++n) bias += xb[n * E + K];
            hy[b] += bias + lanes[0];
            for (int n = 0; n < N; ++n) for (int e = 0; e < E; ++e) {
                float& d = hdx[(size_t)b * ne + n * E + e];
                if (e == K) { d += dy[b]; continue; }
                float s = 0.f;
                for (int n2 = 0; n2 < N; ++n2) if (n2 != n) s += xb[n2 * E + e];
                d = fmaf(dy[b], s, d);
            }
        }
        for (unsigned grid : {1u, 2u, 7u}) {
            vector<float> y = y0, dx = dx0;
            launch({grid, 1, 1}, {256, 1, 1}, [&] { pairwise_forward(y.data(), x.data(), B, N, E); });
            launch({grid, 1, 1}, {256, 1, 1}, [&] { pairwise_backward(dx.data(), dy.data(), x.data(), B, N, E); });
            snprintf(buf, sizeof buf, "pairwise_forward B %d N %d E %d grid %u", B, N, E, grid);
            check(buf, y, wy);
            if (memcmp(y.data(), hy.data(), 4 * B)) { printf("FAIL %s: not the bits of the documented order\n", buf); fails++; }
            snprintf(buf, sizeof buf, "pairwise_backward B %d N %d E %d grid %u", B, N, E, grid);
            check(buf, dx, wdx);
            if (memcmp(dx.data(), hdx.data(), 4 * dx.size())) { printf("FAIL %s: not the bits of the documented order\n", buf); fails++; }
        }
    }
}

int main() {
    // EMU_ONLY=tc runs only the tensor-core checks, EMU_ONLY=sparse only the
    // sparse kernels' and Adam's, EMU_ONLY=pairwise only the pairwise
    // kernels' (quick, for kernel work).
    const bool only_tc = getenv("EMU_ONLY") && string(getenv("EMU_ONLY")) == "tc";
    const bool only_sparse = getenv("EMU_ONLY") && string(getenv("EMU_ONLY")) == "sparse";
    const bool only_family = getenv("EMU_ONLY") && string(getenv("EMU_ONLY")) == "family";
    if (getenv("EMU_ONLY") && string(getenv("EMU_ONLY")) == "pairwise") {
        // EMU_ONLY=pairwise: only the pairwise kernels (make check-kernels-emu).
        testPairwise();
        printf("%s (%d failures)\n", fails ? "FAIL" : "PASS", fails);
        return fails != 0;
    }
    if (only_family) {
        // EMU_ONLY=family: only the GEMM family (make check-kernels-emu).
        mt19937 g(11);
        int fs[][4] = {{130, 70, 150, 0}, {67, 33, 45, 1}, {200, 36, 20, 0}};
        for (auto& s : fs) testFamily(s[0], s[1], s[2], s[3], g);
        if (g_emu_errors) { printf("FAIL: %d PTX rule violations\n", g_emu_errors.load()); fails++; }
        printf("%s (%d failures)\n", fails ? "FAIL" : "PASS", fails);
        return fails != 0;
    }
    if (!only_tc && !only_sparse) {
    // Linear layers. Each GEMM runs unsplit and split (kchunk 16, 48 and
    // 128, reduced by split_k_reduce), every epilogue flag on and off.
    int shapes[][3] = {{1, 1, 1}, {65, 17, 3}, {64, 64, 64}, {130, 150, 70}, {33, 5, 1}, {3, 40, 129}, {0 + 200, 128, 1}, {70, 63, 1}};
    for (auto& s : shapes) {
        int B = s[0], I = s[1], O = s[2];
        auto x = rnd((size_t)B * I), w = rnd((size_t)O * I), bias = rnd(O), dy = rnd((size_t)B * O);
        for (size_t i = 0; i < x.size(); i += 3) x[i] = 0;  // ReLU zeros for the mask
        char buf[160];
        for (int relu = 0; relu < 2; ++relu) {
            vector<double> want((size_t)B * O);
            for (int b = 0; b < B; ++b) for (int o = 0; o < O; ++o) { double t = bias[o]; for (int i = 0; i < I; ++i) t += (double)x[b * I + i] * w[o * I + i]; if (relu && t < 0) t = 0; want[b * O + o] = t; }
            for (int kchunk : {I, 16, 48, 128}) {
                int parts = cdiv(I, kchunk);
                vector<float> y((size_t)B * O, NAN), part((size_t)parts * B * O, NAN);
                launch({cdiv(B, 64), cdiv(O, 64), (unsigned)parts}, {256, 1, 1}, [&] { linear_forward(y.data(), part.data(), x.data(), w.data(), bias.data(), B, I, O, kchunk, relu ? 2 : 0); });
                if (parts > 1) launch({3, 1, 1}, {256, 1, 1}, [&] { split_k_reduce(y.data(), nullptr, part.data(), bias.data(), nullptr, B, O, O, parts, relu ? 2 : 0); });
                snprintf(buf, sizeof buf, "linear_forward %dx%dx%d relu %d chunk %d", B, I, O, relu, kchunk); check(buf, y, want);
            }
            if (O == 1) {
                vector<float> y(B, NAN);
                launch({2, 1, 1}, {256, 1, 1}, [&] { linear_forward_out1(y.data(), x.data(), w.data(), bias.data(), B, I, relu ? 2 : 0); });
                snprintf(buf, sizeof buf, "linear_forward_out1 %dx%d relu %d", B, I, relu); check(buf, y, want);
            }
        }
        for (int mask = 0; mask < 2; ++mask) {
            vector<double> want((size_t)B * I);
            for (int b = 0; b < B; ++b) for (int i = 0; i < I; ++i) { double t = 0; for (int o = 0; o < O; ++o) t += (double)dy[b * O + o] * w[o * I + i]; if (mask && !(x[b * I + i] > 0)) t = 0; want[b * I + i] = t; }
            for (int kchunk : {O, 16, 48}) {
                int parts = cdiv(O, kchunk);
                vector<float> dx((size_t)B * I, NAN), part((size_t)parts * B * I, NAN);
                launch({cdiv(B, 64), cdiv(I, 64), (unsigned)parts}, {256, 1, 1}, [&] { linear_backward_dx(dx.data(), part.data(), dy.data(), w.data(), x.data(), B, I, O, kchunk, mask ? 4 : 0); });
                if (parts > 1) launch({3, 1, 1}, {256, 1, 1}, [&] { split_k_reduce(dx.data(), nullptr, part.data(), nullptr, x.data(), B, I, I, parts, mask ? 4 : 0); });
                snprintf(buf, sizeof buf, "linear_backward_dx %dx%dx%d mask %d chunk %d", B, I, O, mask, kchunk); check(buf, dx, want);
            }
        }
        vector<double> dww((size_t)O * I), dbw(O);
        for (int o = 0; o < O; ++o) { double tb = 0; for (int b = 0; b < B; ++b) tb += dy[b * O + o]; dbw[o] = tb; for (int i = 0; i < I; ++i) { double t = 0; for (int b = 0; b < B; ++b) t += (double)dy[b * O + o] * x[b * I + i]; dww[o * I + i] = t; } }
        for (int kchunk : {B, 16, 32, 48}) {
            int parts = cdiv(B, kchunk);
            for (int acc = 0; acc < 2; ++acc) {
                vector<double> want = dww, wantb = dbw; if (acc) { for (auto& v : want) v += 1; for (auto& v : wantb) v += 1; }
                for (int withb = 0; withb < 2; ++withb) {
                    int P = I + withb;
                    vector<float> dw((size_t)O * I, acc ? 1.f : NAN), db(O, acc ? 1.f : NAN), part((size_t)parts * O * P, NAN);
                    int flags = (acc ? 1 : 0) | (withb ? 8 : 0);
                    launch({cdiv(O, 64), cdiv(I, 64), (unsigned)parts}, {256, 1, 1}, [&] { linear_backward_dw(dw.data(), withb ? db.data() : nullptr, part.data(), dy.data(), x.data(), B, I, O, kchunk, flags); });
                    if (parts > 1) launch({4, 1, 1}, {256, 1, 1}, [&] { split_k_reduce(dw.data(), withb ? db.data() : nullptr, part.data(), nullptr, nullptr, O, I, P, parts, acc); });
                    snprintf(buf, sizeof buf, "linear_backward_dw %dx%dx%d chunk %d acc %d db %d", B, I, O, kchunk, acc, withb); check(buf, dw, want);
                    if (withb) { snprintf(buf, sizeof buf, "linear_backward_dw (db) %dx%dx%d chunk %d acc %d", B, I, O, kchunk, acc); check(buf, db, wantb); }
                    else for (float v : db) if (!std::isnan(v) && !acc) { printf("FAIL linear_backward_dw wrote db without kEpiBias\n"); fails++; break; }
                }
                vector<float> db(O, acc ? 1.f : NAN), pdb((size_t)parts * O, NAN);
                launch({cdiv(O, 32), (unsigned)parts, 1}, {32, 8, 1}, [&] { linear_backward_db(db.data(), pdb.data(), dy.data(), B, O, kchunk, acc); });
                if (parts > 1) launch({2, 1, 1}, {256, 1, 1}, [&] { split_k_reduce(db.data(), nullptr, pdb.data(), nullptr, nullptr, 1, O, O, parts, acc); });
                snprintf(buf, sizeof buf, "linear_backward_db %dx%d chunk %d acc %d", B, O, kchunk, acc); check(buf, db, wantb);
                if (O == 1) for (int mask = 0; mask < 2; ++mask) for (int which = 0; which < 4; ++which) {
                    // which: 0 all, 1 dx only, 2 dw+db, 3 db+dx
                    bool wx = which != 2, ww = which == 0 || which == 2, wb = which != 1;
                    vector<float> dx((size_t)B * I, NAN), dw1(I, acc ? 1.f : NAN), db1(1, acc ? 1.f : NAN), part((size_t)parts * (I + 1), NAN);
                    bool red = parts > 1 && (ww || wb);
                    int flags = (acc ? 1 : 0) | (mask ? 4 : 0);
                    launch({cdiv(I, 32), (unsigned)parts, 1}, {32, 8, 1}, [&] { linear_backward_out1(wx ? dx.data() : nullptr, ww ? dw1.data() : nullptr, wb ? db1.data() : nullptr, red ? part.data() : nullptr, dy.data(), x.data(), w.data(), B, I, kchunk, flags); });
                    if (red) launch({2, 1, 1}, {256, 1, 1}, [&] { split_k_reduce(ww ? dw1.data() : nullptr, wb ? db1.data() : nullptr, part.data(), nullptr, nullptr, 1, I, I + 1, parts, acc); });
                    vector<double> wdx((size_t)B * I);
                    for (int b = 0; b < B; ++b) for (int i = 0; i < I; ++i) wdx[b * I + i] = (mask && !(x[b * I + i] > 0)) ? 0 : (double)dy[b] * w[i];
                    snprintf(buf, sizeof buf, "linear_backward_out1 %dx%d chunk %d acc %d mask %d which %d", B, I, kchunk, acc, mask, which);
                    if (wx) check(buf, dx, wdx);
                    if (ww) check(buf, dw1, want);
                    if (wb) check(buf, db1, wantb);
                    if (!ww && !acc) for (float v : dw1) if (!std::isnan(v)) { printf("FAIL %s: dw written\n", buf); fails++; break; }
                }
            }
        }
        // influence: direct and via t
        vector<float> score(B, 0.5f), gb = rnd(O);
        vector<double> wants(B);
        for (int b = 0; b < B; ++b) { double t = 0; for (int o = 0; o < O; ++o) { double s2 = gb[o]; for (int i = 0; i < I; ++i) s2 += (double)w[o * I + i] * x[b * I + i]; t += dy[b * O + o] * s2; } wants[b] = 0.5 + 0.25 * t; }
        launch({3, 1, 1}, {256, 1, 1}, [&] { influence_dot(score.data(), dy.data(), x.data(), w.data(), gb.data(), B, I, O, 0.25f); });
        snprintf(buf, 100, "influence_dot %dx%dx%d", B, I, O); check(buf, score, wants);
        vector<float> score2(B, 0.5f), t((size_t)B * O);
        launch({cdiv(B, 64), cdiv(O, 64), 1}, {256, 1, 1}, [&] { linear_forward(t.data(), nullptr, x.data(), w.data(), gb.data(), B, I, O, I, 0); });
        launch({2, 1, 1}, {256, 1, 1}, [&] { influence_rows(score2.data(), dy.data(), t.data(), B, O, 0.25f); });
        snprintf(buf, 100, "influence_rows %dx%dx%d", B, I, O); check(buf, score2, wants);
    }
    }
    // tensor-core GEMMs
    if (!only_sparse) {
        mt19937 g(7);
        // (B, I, O, off): odd widths (4-byte copies), widths that are
        // multiples of 4 (16-byte copies, with edge vectors partly outside),
        // and the same misaligned (off = 1).
        int tcs[][4] = {{1, 1, 1, 0}, {65, 17, 3, 0}, {130, 150, 70, 0}, {3, 40, 129, 0}, {64, 64, 64, 0}, {70, 33, 1, 0},
                        {100, 36, 72, 0}, {130, 68, 4, 0}, {100, 36, 72, 1}, {61, 44, 20, 0}};
        for (auto& s : tcs) testTC(s[0], s[1], s[2], s[3], g);
        testFamily(130, 70, 150, 0, g);
    }
    if (!only_tc && !only_sparse) {
    // gather / scatter / embedding influence / entity importance
    for (int N : {1, 3, 4}) for (int E : {1, 5, 50}) for (int layout = 0; layout < 2; ++layout) {
        int B = 37, R = 11;
        auto table = rnd((size_t)R * E), dxv = rnd((size_t)B * N * E), gt = rnd((size_t)R * E), sc = rnd(B);
        vector<int32_t> cells((size_t)B * N); for (auto& c : cells) c = rng() % R;
        auto pos = [&](int n, int e) { return layout ? e * N + n : n * E + e; };
        vector<float> x((size_t)B * N * E, NAN);
        launch({2, 1, 1}, {256, 1, 1}, [&] { gather(x.data(), table.data(), cells.data(), B, N, E, R, layout); });
        vector<double> wx(x.size());
        for (int b = 0; b < B; ++b) for (int n = 0; n < N; ++n) for (int e = 0; e < E; ++e) wx[(size_t)b * N * E + pos(n, e)] = table[cells[b * N + n] * E + e];
        char buf[100]; snprintf(buf, 100, "gather N %d E %d layout %d", N, E, layout); check(buf, x, wx, 0);
        vector<float> dt((size_t)R * E, 1.f);
        launch({2, 1, 1}, {256, 1, 1}, [&] { scatter_rows(dt.data(), dxv.data(), cells.data(), B, N, E, R, layout); });
        vector<double> wdt(dt.size(), 1.0);
        for (int b = 0; b < B; ++b) for (int n = 0; n < N; ++n) for (int e = 0; e < E; ++e) wdt[cells[b * N + n] * E + e] += dxv[(size_t)b * N * E + pos(n, e)];
        snprintf(buf, 100, "scatter_rows N %d E %d layout %d", N, E, layout); check(buf, dt, wdt);
        vector<float> s(B, 0.25f);
        launch({2, 1, 1}, {256, 1, 1}, [&] { embedding_influence(s.data(), dxv.data(), cells.data(), gt.data(), B, N, E, R, layout, 0.5f); });
        vector<double> ws(B);
        for (int b = 0; b < B; ++b) { double t = 0; for (int n = 0; n < N; ++n) for (int e = 0; e < E; ++e) t += (double)dxv[(size_t)b * N * E + pos(n, e)] * gt[cells[b * N + n] * E + e]; ws[b] = 0.25 + 0.5 * t; }
        snprintf(buf, 100, "embedding_influence N %d E %d layout %d", N, E, layout); check(buf, s, ws);
        vector<float> imp(R, 2.f);
        launch({1, 1, 1}, {256, 1, 1}, [&] { entity_importance(imp.data(), sc.data(), cells.data(), B, N, R); });
        vector<double> wimp(R, 2.0);
        for (int b = 0; b < B; ++b) for (int n = 0; n < N; ++n) wimp[cells[b * N + n]] += fabs(sc[b]);
        snprintf(buf, 100, "entity_importance N %d", N); check(buf, imp, wimp);
    }
    // mse_grad
    for (int n : {1, 31, 1025, 3000}) {
        auto p = rnd(n), y = rnd(n);
        vector<float> d(n, NAN), sq(1, NAN);
        launch({1, 1, 1}, {1024, 1, 1}, [&] { mse_grad(d.data(), sq.data(), p.data(), y.data(), n, 0.5f); });
        vector<double> wd(n); double s = 0; for (int i = 0; i < n; ++i) { double e = (double)(p[i] - y[i]); wd[i] = 0.5 * e; s += e * e; }
        check("mse_grad delta", d, wd, 1e-6); check("mse_grad sq", sq, {s}, 1e-6);
        vector<float> d2(n, NAN);
        launch({2, 1, 1}, {1024, 1, 1}, [&] { mse_grad(d2.data(), nullptr, p.data(), y.data(), n, 0.5f); });
        check("mse_grad nosq", d2, wd, 1e-6);
    }
    // mul: one float32 rounding per element, bit for bit the host product,
    // over grids smaller and larger than n (the grid-stride loop).
    for (int n : {1, 255, 1000, 70000}) {
        auto a = rnd(n), b = rnd(n);
        for (unsigned grid : {1u, 3u, (unsigned)cdiv(n, 256)}) {
            vector<float> d(n, NAN);
            launch({grid, 1, 1}, {256, 1, 1}, [&] { mul(d.data(), a.data(), b.data(), n); });
            int bad = 0;
            for (int i = 0; i < n; ++i) if (d[i] != a[i] * b[i]) bad++;
            if (bad) { printf("FAIL mul n %d grid %u: %d of %d not the float32 product\n", n, grid, bad, n); fails++; }
        }
    }
    // linear_forward_out1_mse: pred and delta bit for bit those of
    // linear_forward_out1 then mse_grad, sq within float64 rounding, the
    // count left at zero, over grids smaller and larger than the rows.
    for (auto [B, I] : {std::pair{1, 1}, {33, 5}, {200, 128}, {1000, 128}, {70, 63}}) {
        auto x = rnd((size_t)B * I), w = rnd(I), bias = rnd(1), y = rnd(B);
        for (int relu = 0; relu < 2; ++relu)
            for (unsigned grid : {1u, 3u, (unsigned)cdiv(B, 8), 200u}) {
                for (int withSq = 0; withSq < 2; ++withSq) {
                    vector<float> p1(B, NAN), d1(B, NAN), sq1(1, NAN), p2(B, NAN), d2(B, NAN), sq2(1, NAN);
                    vector<double> part(grid, NAN);
                    uint32_t count = 0;
                    launch({2, 1, 1}, {256, 1, 1}, [&] { linear_forward_out1(p1.data(), x.data(), w.data(), bias.data(), B, I, relu ? 2 : 0); });
                    launch({1, 1, 1}, {1024, 1, 1}, [&] { mse_grad(d1.data(), sq1.data(), p1.data(), y.data(), B, 0.25f); });
                    for (int rep = 0; rep < 2; ++rep)  // the second launch reuses the count
                        launch({grid, 1, 1}, {256, 1, 1}, [&] { linear_forward_out1_mse(p2.data(), d2.data(), withSq ? sq2.data() : nullptr, part.data(), &count, x.data(), w.data(), bias.data(), y.data(), B, I, relu ? 2 : 0, 0.25f); });
                    char buf[120];
                    snprintf(buf, sizeof buf, "linear_forward_out1_mse %dx%d relu %d grid %u sq %d", B, I, relu, grid, withSq);
                    if (memcmp(p1.data(), p2.data(), 4 * B) || memcmp(d1.data(), d2.data(), 4 * B)) { printf("FAIL %s: pred or delta differ from out1 + mse_grad\n", buf); fails++; }
                    if (count != 0) { printf("FAIL %s: count left at %u\n", buf, count); fails++; }
                    double s = 0; for (int b = 0; b < B; ++b) { double e = (double)p1[b] - y[b]; s += e * e; }
                    if (withSq) check(buf, sq2, {s}, 1e-6);
                    else if (!std::isnan(sq2[0])) { printf("FAIL %s: sq written\n", buf); fails++; }
                }
            }
    }
    // adam
    {
        int n = 1000; auto p = rnd(n), g = rnd(n), m = rnd(n), v = rnd(n); for (auto& x : v) x = fabs(x);
        vector<double> wp(n);
        double b1 = .9, b2 = .999, lr = 1e-3, eps = 1e-8; int T = 3;
        double c1 = 1 - pow(b1, T), c2 = 1 - pow(b2, T);
        for (int i = 0; i < n; ++i) { double mi = b1 * m[i] + (1 - b1) * g[i], vi = b2 * v[i] + (1 - b2) * g[i] * g[i]; wp[i] = p[i] - lr / c1 * mi / (sqrt(vi) / sqrt(c2) + eps); }
        launch({2, 1, 1}, {256, 1, 1}, [&] { adam(p.data(), m.data(), v.data(), g.data(), n, b1, b2, 1 - b1, 1 - b2, lr / c1, 1 / sqrt(c2), eps, 0.f); });
        check("adam", p, wp, 1e-5);
    }
    // sample_alias: print for comparison with Go
    {
        int M = 5, N = 3, I = 7;
        vector<int32_t> thresh(I), alias(I), out(M * N, -1);
        for (int i = 0; i < I; ++i) { thresh[i] = (int32_t)(uint32_t)(0x30000000u * (i + 1)); alias[i] = (i * 3 + 1) % I; }
        launch({1, 1, 1}, {256, 1, 1}, [&] { sample_alias(out.data(), thresh.data(), alias.data(), M, N, 1, I, 0x123456789abcdefULL, 0xfffffffffffffffeULL); });
        // compute.AliasDraw(thresh, alias, 1, key, ctr, m) for m = 0..4, from Go
        // (the counter wraps past 2^64 at m = 2).
        const int32_t want[5] = {0, 2, 5, 5, 3};
        for (int m = 0; m < M; ++m)
            if (out[m * N + 1] != want[m] || out[m * N] != -1 || out[m * N + 2] != -1) { printf("FAIL sample_alias row %d: %d, want %d\n", m, out[m * N + 1], want[m]); fails++; }
        // Random123 known answers for Philox4x32-10.
        uint4 r = dainx::philox4x32_10(make_uint4(0, 0, 0, 0), make_uint2(0, 0));
        if (r.x != 0x6627e8d5 || r.y != 0xe169c58d || r.z != 0xbc57ac4c || r.w != 0x9b00dbd8) { printf("FAIL philox KAT 0\n"); fails++; }
        r = dainx::philox4x32_10(make_uint4(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), make_uint2(0xffffffff, 0xffffffff));
        if (r.x != 0x408f276d || r.y != 0x41c83b0e || r.z != 0xa20bc7c6 || r.w != 0x6d5451fd) { printf("FAIL philox KAT f\n"); fails++; }
    }
    }
    if (!only_tc) testSparse();
    if (!only_tc && !only_sparse) testPairwise();
    if (g_emu_errors) { printf("FAIL: %d PTX rule violations (non-TF32 mma operands, or cp.async copies never waited for)\n", g_emu_errors.load()); fails++; }
    printf("%s (%d failures)\n", fails ? "FAIL" : "PASS", fails);
    return fails != 0;
}
