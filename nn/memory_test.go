package nn

import (
	"context"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

// deviceOnly hides the CPU backend's HostBuffers, so that sets and Train
// take the path of a device backend: host copies uploaded, the shuffled set
// staged and uploaded each epoch.
type deviceOnly struct{ compute.Backend }

// TestTrainHostBuffers: on the CPU a Set's buffers are its host copies,
// Train's per-step batches give bit-identical parameters and history to
// the staged upload of a device backend (in chunks smaller than the set),
// NewSetConcat equals NewSet of the concatenation, and one epoch over T
// cells allocates less than a shuffled copy of the set would.
func TestTrainHostBuffers(t *testing.T) {
	defer func(n int) { stageCells = n }(stageCells)
	stageCells = 777
	dims := []int{30, 20, 10}
	cells, vals := lowRank(rand.New(rand.NewPCG(7, 8)), dims, 5000)
	run := func(be compute.Backend, concat bool) ([]float32, Result, *Set) {
		m, err := NewMLP(be, Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 128}, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		var train *Set
		if concat {
			train = m.NewSetConcat([][]int32{cells[:1000*3], cells[1000*3 : 4000*3]}, [][]float64{vals[:1000], vals[1000:4000]})
		} else {
			train = m.NewSet(cells[:4000*3], vals[:4000])
		}
		val := m.NewSet(cells[4000*3:], vals[4000:])
		res, err := Train(context.Background(), m, train, val, TrainConfig{Epochs: 3, Batch: 100, Patience: 3, LR: 1e-2, Shuffle: rand.New(rand.NewPCG(5, 6))})
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float32, m.params.Len())
		if err := be.Download(p, m.params); err != nil {
			t.Fatal(err)
		}
		return p, res, train
	}
	pCPU, rCPU, set := run(cpu.New(), false)
	if reflect.ValueOf(set.Rows).Pointer() != reflect.ValueOf(set.rows).Pointer() || reflect.ValueOf(set.Vals).Pointer() != reflect.ValueOf(set.vals).Pointer() {
		t.Error("a CPU Set holds a second copy of its cells")
	}
	pDev, rDev, _ := run(deviceOnly{cpu.New()}, false)
	pCat, rCat, _ := run(cpu.New(), true)
	for _, c := range []struct {
		name string
		p    []float32
		r    Result
	}{{"staged upload", pDev, rDev}, {"NewSetConcat", pCat, rCat}} {
		for i := range c.r.Epochs {
			c.r.Epochs[i].Seconds = 0
			rCPU.Epochs[i].Seconds = 0
		}
		if !slices.Equal(c.p, pCPU) || !reflect.DeepEqual(c.r, rCPU) {
			t.Errorf("%s: parameters or history differ from the CPU's per-step batches", c.name)
		}
	}

	// One epoch's allocations.
	const T = 200_000
	big := make([]int32, 3*T)
	bigVals := make([]float64, T)
	r := rand.New(rand.NewPCG(9, 9))
	for i := range big {
		big[i] = int32(r.IntN(dims[i%3]))
	}
	m, err := NewMLP(cpu.New(), Config{Dims: dims, Layers: []int{12, 16, 8}, Capacity: 1024}, r)
	if err != nil {
		t.Fatal(err)
	}
	train, val := m.NewSet(big, bigVals), m.NewSet(big[:3000], bigVals[:1000])
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Train(context.Background(), m, train, val, TrainConfig{Epochs: 1, Batch: 1024, Patience: 1, LR: 1e-3}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// The order takes 4 bytes a cell and the steps' small temporaries
	// about 10 (per step of 1024 cells); a shuffled copy of the set on
	// the host and on the "device" would add 32.
	if got := after.TotalAlloc - before.TotalAlloc; got > 20*T {
		t.Errorf("one epoch over %d cells allocated %d bytes (%.1f a cell); want at most 20 a cell", T, got, float64(got)/T)
	}
}
