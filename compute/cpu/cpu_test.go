package cpu_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dainx/dainx/compute/computetest"
	"github.com/dainx/dainx/compute/cpu"
)

// TestConformance runs the backend conformance suite on every code path of
// the CPU backend: the avx512 path (the 12×32 AVX-512F GEMM kernel) and the
// avx2 path (the 6×16 AVX2/FMA one), each with the sparse-A GEMM forced
// off, forced on and chosen by sample, the gonum path (gonum's blas32 GEMM)
// and the generic (our pure-Go kernel) path, each with 1 and 3 threads.
// The avx512 and avx2 paths are skipped with a message on a CPU without
// the features (TestWithoutAVX512 covers avx2 as the default there). The CPU
// backend is documented as deterministic, so it runs with no operation
// exempted from bit-reproducibility. The large Linear case runs on these
// paths only with DAINX_TEST_LARGE=1 (about 4 minutes on 2 cores; TestDefault
// always runs it).
func TestConformance(t *testing.T) {
	for _, c := range []struct{ kernel, sparse string }{
		{"avx512", "off"}, {"avx512", "always"}, {"avx512", "auto"},
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

// TestWithoutAVX512 re-runs this test binary with AVX-512 hidden
// (GODEBUG=cpu.avx512f=off): New must then choose the avx2 path, with no
// AVX-512 kernel anywhere (GEMM or narrow layers), refuse kernel avx512,
// and pass the suite, as on an AVX2-only CPU.
func TestWithoutAVX512(t *testing.T) {
	if os.Getenv("DAINX_TEST_NOAVX512") == "1" {
		if k := cpu.Kernels(); len(k) != 3 || k[0] != "avx2" {
			t.Fatalf("with AVX-512 off, Kernels() = %v, want [avx2 gonum generic]", k)
		}
		if _, err := cpu.NewWith(cpu.Options{Kernel: "avx512"}); err == nil {
			t.Fatal("kernel avx512 accepted with AVX-512 off")
		}
		be := cpu.New()
		if d := be.Device(); strings.Contains(d, "512") || be.GEMMKernel() != "avx2 6×16" {
			t.Fatalf("with AVX-512 off: device %q, GEMM kernel %q", d, be.GEMMKernel())
		}
		if p := cpu.PeakGFLOPS(1, time.Millisecond); p.ISA != "avx2" || p.AVX512 != (cpu.Rate{}) {
			t.Fatalf("with AVX-512 off: peak %+v, want avx2 only", p)
		}
		computetest.RunWith(t, be, computetest.Options{SkipLarge: os.Getenv("DAINX_TEST_LARGE") != "1"})
		return
	}
	if k := cpu.Kernels(); k[0] != "avx512" {
		t.Skipf("no avx512 path to turn off (Kernels() = %v)", k)
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWithoutAVX512$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "DAINX_TEST_NOAVX512=1", "GODEBUG=cpu.avx512f=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("without AVX-512: %v\n%s", err, out)
	}
}

// TestPeakISA checks that PeakGFLOPS reports the widest ISA's loop: avx512
// where the avx512 path exists, with the AVX2 rate beside it.
func TestPeakISA(t *testing.T) {
	p := cpu.PeakGFLOPS(1, time.Millisecond)
	switch cpu.Kernels()[0] {
	case "avx512":
		if p.ISA != "avx512" || p.AVX512.PerCore <= 0 || p.AVX2.PerCore <= 0 || p.PerCore != p.AVX512.PerCore {
			t.Fatalf("peak %+v: want avx512's, with avx2's beside it", p)
		}
	case "avx2":
		if p.ISA != "avx2" || p.AVX2.PerCore <= 0 || p.AVX512 != (cpu.Rate{}) || p.PerCore != p.AVX2.PerCore {
			t.Fatalf("peak %+v: want avx2's only", p)
		}
	default:
		if p != (cpu.Peak{}) {
			t.Fatalf("peak %+v without AVX2", p)
		}
	}
}
