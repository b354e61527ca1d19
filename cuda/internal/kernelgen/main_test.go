package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodHeader = `// k: test kernel.
//
//   y[i] = x[i]   (=)
//
// Shapes: x, y n.
// Launch: block 256.
// Atomics: none.
// Reference: none.
`

func parseSource(t *testing.T, name, src string) (kernel, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name+".cu")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return parse(path)
}

func TestParse(t *testing.T) {
	k, err := parseSource(t, "k", goodHeader+`#include "common.cuh"
extern "C" __global__ void __launch_bounds__(256)
k(float* __restrict__ y, const float* __restrict__ x, const int32_t* __restrict__ c,
  int32_t n, uint32_t u, float s, uint64_t key) { /* body, __global__ in a comment */ }
`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range k.params {
		got = append(got, p.ctype+" "+p.name)
	}
	want := "float* y,const float* x,const int32_t* c,int32_t n,uint32_t u,float s,uint64_t key"
	if strings.Join(got, ",") != want {
		t.Errorf("params %q, want %q", strings.Join(got, ","), want)
	}
	b, err := launcher(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{marker, "a.Ptr(y)", "a.Int32(n)", "a.Uint32(u)", "a.Float32(s)", "a.Uint64(key)", "kernelK"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("launcher lacks %q:\n%s", s, b)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range []struct{ what, src, msg string }{
		{"two kernels", goodHeader + `extern "C" __global__ void k(float* __restrict__ y) {}
extern "C" __global__ void k2(float* __restrict__ y) {}`, "exactly one"},
		{"wrong name", goodHeader + `extern "C" __global__ void other(float* __restrict__ y) {}`, "file stem"},
		{"no extern C", goodHeader + `__global__ void k(float* __restrict__ y) {}`, `extern "C"`},
		{"double", goodHeader + `extern "C" __global__ void k(double y) {}`, "allowed"},
		{"const double*", goodHeader + `extern "C" __global__ void k(const double* __restrict__ y) {}`, "allowed"},
		{"int", goodHeader + `extern "C" __global__ void k(float* __restrict__ y, int n) {}`, "allowed"},
		{"no restrict", goodHeader + `extern "C" __global__ void k(float* y) {}`, "__restrict__"},
		{"output after input", goodHeader + `extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y) {}`, "after an input"},
		{"pointer after scalar", goodHeader + `extern "C" __global__ void k(float* __restrict__ y, int32_t n, const float* __restrict__ x) {}`, "after a scalar"},
		{"no contract", "// k\n" + `extern "C" __global__ void k(float* __restrict__ y) {}`, "header lacks"},
	} {
		_, err := parseSource(t, "k", c.src)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want one containing %q", c.what, err, c.msg)
		}
	}
}
