package cpu_test

import (
	"testing"

	"github.com/dainx/dainx/compute/computetest"
	"github.com/dainx/dainx/compute/cpu"
)

// TestConformance runs the backend conformance suite on every code path of
// the CPU backend, each with 1 and 3 threads. The CPU backend is documented
// as deterministic, so it runs with no operation exempted from
// bit-reproducibility.
func TestConformance(t *testing.T) {
	for _, kernel := range []string{"avx2", "generic"} {
		for _, threads := range []int{1, 3} {
			t.Run(kernel+"/threads="+string(rune('0'+threads)), func(t *testing.T) {
				be, err := cpu.NewWith(cpu.Options{Kernel: kernel, Threads: threads})
				if err != nil {
					t.Skipf("kernel %s not available on this CPU: %v", kernel, err)
				}
				computetest.Run(t, be)
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
	if _, err := cpu.NewWith(cpu.Options{Kernel: "sse9"}); err == nil {
		t.Error("unknown kernel accepted")
	}
	if _, err := cpu.NewWith(cpu.Options{Threads: -1}); err == nil {
		t.Error("negative threads accepted")
	}
}
