package cpu_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/dainx/dainx/compute/computetest"
	"github.com/dainx/dainx/compute/cpu"
)

// TestConformance runs the backend conformance suite on every code path of
// the CPU backend: the avx2 path (AVX2/FMA assembly) with the sparse-A GEMM
// forced off and forced on, the gonum path (gonum's blas32 GEMM) and the
// generic (our pure-Go kernel) path, each with 1 and 3 threads. The avx2
// paths are skipped with a message on a CPU without AVX2 and FMA. The CPU
// backend is documented as deterministic, so it runs with no operation
// exempted from bit-reproducibility. The large Linear case runs on these
// paths only with DAINX_TEST_LARGE=1 (about 4 minutes on 2 cores; TestDefault
// always runs it).
func TestConformance(t *testing.T) {
	for _, c := range []struct{ kernel, sparse string }{
		{"avx2", "off"}, {"avx2", "always"}, {"avx2", "auto"}, {"gonum", "auto"}, {"generic", "auto"},
	} {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/sparse=%s/threads=%d", c.kernel, c.sparse, threads), func(t *testing.T) {
				be, err := cpu.NewWith(cpu.Options{Kernel: c.kernel, Sparse: c.sparse, Threads: threads})
				if err != nil {
					t.Skipf("kernel %s not available on this CPU: %v", c.kernel, err)
				}
				computetest.RunWith(t, be, computetest.Options{SkipLarge: os.Getenv("DAINX_TEST_LARGE") != "1"})
			})
		}
	}
}

// TestDefault runs the suite on New, the path every caller gets.
func TestDefault(t *testing.T) {
	be := cpu.New()
	if be.Kernel() != cpu.Kernels()[0] {
		t.Errorf("New chose %s, want %s", be.Kernel(), cpu.Kernels()[0])
	}
	computetest.Run(t, be)
}

func TestNewWithErrors(t *testing.T) {
	for _, opt := range []cpu.Options{{Kernel: "sse9"}, {Threads: -1}, {Sparse: "sometimes"}} {
		if _, err := cpu.NewWith(opt); err == nil {
			t.Errorf("NewWith(%+v) accepted", opt)
		}
	}
}

// TestWithoutAVX2 re-runs this test binary with AVX2 and FMA hidden
// (GODEBUG=cpu.avx2=off,cpu.fma=off, honoured by golang.org/x/sys/cpu): New
// must then choose the gonum path and pass the suite, as on a CPU without
// them.
func TestWithoutAVX2(t *testing.T) {
	if os.Getenv("DAINX_TEST_NOAVX2") == "1" {
		if k := cpu.Kernels(); len(k) != 2 || k[0] != "gonum" {
			t.Fatalf("with AVX2 and FMA off, Kernels() = %v, want [gonum generic]", k)
		}
		if _, err := cpu.NewWith(cpu.Options{Kernel: "avx2"}); err == nil {
			t.Fatal("kernel avx2 accepted without AVX2")
		}
		computetest.RunWith(t, cpu.New(), computetest.Options{SkipLarge: os.Getenv("DAINX_TEST_LARGE") != "1"})
		return
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWithoutAVX2$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "DAINX_TEST_NOAVX2=1", "GODEBUG=cpu.avx2=off,cpu.fma=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("without AVX2: %v\n%s", err, out)
	}
}
