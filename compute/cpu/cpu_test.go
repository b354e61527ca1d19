package cpu_test

import (
	"testing"

	"github.com/dainx/dainx/compute/computetest"
	"github.com/dainx/dainx/compute/cpu"
)

// TestConformance runs the backend conformance suite. The CPU backend is
// documented as deterministic, so it runs with no operation exempted from
// bit-reproducibility.
func TestConformance(t *testing.T) {
	computetest.Run(t, cpu.New())
}
