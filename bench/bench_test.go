package bench

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/nn"
)

// backends returns the backends to benchmark: the CPU backend on each of its
// code paths, and the CUDA backend when a driver and a device are present
// (else it logs why not).
func backends(tb testing.TB) []compute.Backend {
	var bes []compute.Backend
	for _, k := range cpu.Kernels() {
		be, err := cpu.NewWith(cpu.Options{Kernel: k})
		if err != nil {
			tb.Fatal(err)
		}
		bes = append(bes, be)
	}
	// The settings the dainx commands take from the environment
	// (docs/environment.md); the cuda package reads none.
	o := cuda.Options{SerialSplitK: os.Getenv("DAINX_GEMM_SERIAL") == "1", Sync: os.Getenv("DAINX_CUDA_SYNC") == "1", Library: os.Getenv("DAINX_LIBCUDA")}
	o.Device, _ = strconv.Atoi(os.Getenv("DAINX_DEVICE"))
	if v := os.Getenv("DAINX_GEMM_TUNE"); v != "" {
		o.GemmTune, _ = cuda.ParseGemmTune(v)
	}
	if gpu, err := cuda.NewWith(o); err == nil {
		bes = append(bes, gpu)
	} else {
		tb.Logf("no CUDA backend: %v", err)
	}
	return bes
}

func closeAll(bes []compute.Backend) {
	for _, be := range bes {
		be.Close()
	}
}

func beName(be compute.Backend) string {
	if c, ok := be.(*cpu.Backend); ok {
		return "cpu-" + c.Kernel()
	}
	return be.Name()
}

// BenchmarkOps times every backend operation at the default MLP's shapes
// (see Ops) and reports its rate.
func BenchmarkOps(b *testing.B) {
	bes := backends(b)
	defer closeAll(bes)
	for _, be := range bes {
		ops := Ops(be)
		for _, op := range ops {
			b.Run(beName(be)+"/"+strings.ReplaceAll(op.Name, " ", "_"), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					op.Run()
				}
				be.Sync()
				b.ReportMetric(op.Work*float64(b.N)/b.Elapsed().Seconds(), op.Unit)
			})
		}
		for _, op := range ops {
			op.Free()
		}
	}
}

// BenchmarkTrainStep times one Adam step of the default MLP (150, 1024,
// 1024, 128, 1) at batch 1024: forward, MSE gradient, backward, Adam.
func BenchmarkTrainStep(b *testing.B) {
	bes := backends(b)
	defer closeAll(bes)
	for _, be := range bes {
		b.Run(beName(be), func(b *testing.B) {
			ts, err := NewTrainStep(be, nn.DefaultLayers(3))
			if err != nil {
				b.Fatal(err)
			}
			defer ts.Free()
			ts.Run()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ts.Run()
			}
			be.Sync()
			b.ReportMetric(Batch*float64(b.N)/b.Elapsed().Seconds(), "cells/s")
			b.ReportMetric(ts.Flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestOpsRun runs every micro-benchmark and a training step once on the
// default CPU path, so that they stay runnable.
func TestOpsRun(t *testing.T) {
	be := cpu.New()
	for _, op := range Ops(be) {
		op.Run()
		op.Free()
	}
	ts, err := NewTrainStep(be, []int{150, 64, 32})
	if err != nil {
		t.Fatal(err)
	}
	ts.Run()
	NewTracInPass(ts).Run()
	ts.Free()
}

// replayBackend is a CPU backend with a compute.Capturer whose graphs run
// the captured function again at each launch, as a CUDA graph replays the
// operations it recorded.
type replayBackend struct{ compute.Backend }

func (replayBackend) Capture(f func()) (compute.Graph, error) { return replayGraph(f), nil }

type replayGraph func()

func (g replayGraph) Launch() { g() }
func (replayGraph) Free()     {}

// TestGraphStep: five replays of the captured step leave the parameters of
// five eager steps, bit for bit (each replay must read its own step's Adam
// constants); a backend without graphs is refused.
func TestGraphStep(t *testing.T) {
	params := func(graph bool) []float32 {
		be := replayBackend{cpu.New()}
		ts, err := NewTrainStep(be, []int{150, 64, 32})
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Free()
		run := ts.Run
		if graph {
			gs, err := NewGraphStep(ts)
			if err != nil {
				t.Fatal(err)
			}
			defer gs.Free()
			run = gs.Run
		}
		for range 5 {
			run()
		}
		p := make([]float32, ts.m.Params().Len())
		if err := be.Download(p, ts.m.Params()); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if !slices.Equal(params(true), params(false)) {
		t.Error("the replayed step's parameters differ from the eager step's")
	}
	ts, err := NewTrainStep(cpu.New(), []int{150, 64, 32})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Free()
	if _, err := NewGraphStep(ts); err == nil {
		t.Error("NewGraphStep on the CPU backend: no error")
	}
}
