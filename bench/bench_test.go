package bench

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
)

// backends returns the backends to benchmark.
func backends() []compute.Backend { return []compute.Backend{cpu.New()} }

func filled(be compute.Backend, n int, rng *rand.Rand) compute.F32 {
	h := make([]float32, n)
	for i := range h {
		h[i] = float32(rng.NormFloat64())
	}
	b := be.Alloc(n)
	be.Upload(b, h)
	return b
}

// BenchmarkLinearForward times y = ReLU(x·wᵀ + b) at the default MLP's
// shapes with batch 1024 and reports GFLOP/s (2·B·in·out flops).
func BenchmarkLinearForward(b *testing.B) {
	for _, be := range backends() {
		for _, s := range [][2]int{{150, 1024}, {1024, 1024}, {1024, 128}} {
			in, out, batch := s[0], s[1], 1024
			rng := rand.New(rand.NewPCG(1, 1))
			x, w, bias, y := filled(be, batch*in, rng), filled(be, out*in, rng), filled(be, out, rng), be.Alloc(batch*out)
			b.Run(be.Name()+"/"+strconv.Itoa(in)+"x"+strconv.Itoa(out), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					be.LinearForward(y, x, w, bias, in, out, true)
				}
				be.Sync()
				b.ReportMetric(2*float64(batch*in*out)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkTrainStep times one Adam step of the default MLP (150, 1024,
// 1024, 128, 1) at batch 1024: forward, MSE gradient, backward, Adam.
func BenchmarkTrainStep(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.Name(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			dims := []int{1000, 1000, 1000}
			const batch = 1024
			m, err := nn.NewMLP(be, nn.Config{Dims: dims, Layers: nn.DefaultLayers(3), Capacity: batch}, rng)
			if err != nil {
				b.Fatal(err)
			}
			cells := make([]int32, batch*3)
			vals := make([]float64, batch)
			for i := range cells {
				cells[i] = int32(rng.IntN(1000))
			}
			s := m.NewSet(cells, vals)
			delta := be.Alloc(batch)
			am, av := be.Alloc(m.NumParams()), be.Alloc(m.NumParams())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pred := m.Forward(s.Rows)
				be.MSEGrad(delta, nil, pred, s.Vals, 2.0/batch)
				m.Backward(s.Rows, delta, false)
				be.Adam(m.Params(), m.Grads(), am, av, compute.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: i + 1})
			}
			be.Sync()
			b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "cells/s")
		})
	}
}
