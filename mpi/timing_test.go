package mpi

import (
	"os"
	"testing"
	"time"
)

// TestTiming, under mpiexec with DAINX_MPI_TIMING=1, prints the time of
// the collectives of one sparse training step.
func TestTiming(t *testing.T) {
	if os.Getenv("DAINX_MPI_TIMING") == "" {
		t.Skip("DAINX_MPI_TIMING=1 under mpiexec")
	}
	c, err := Init(envOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Finalize()
	for _, n := range []int{1, 1000, 130000, 1400000} {
		x := make([]float32, n)
		c.Barrier()
		t0 := time.Now()
		const k = 50
		for i := 0; i < k; i++ {
			c.Allreduce(x, Sum)
		}
		if c.Rank() == 0 {
			t.Logf("Allreduce %d floats: %v", n, time.Since(t0)/k)
		}
	}
	x := make([]float32, 50*1500)
	c.Barrier()
	t0 := time.Now()
	for i := 0; i < 50; i++ {
		Allgatherv(c, x)
	}
	if c.Rank() == 0 {
		t.Logf("Allgatherv %d floats: %v", len(x), time.Since(t0)/50)
	}
}
