package nn

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"fmt"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

func TestZZProf(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	dims := []int{1000, 1000, 100}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 300000)
	be := cpu.New()
	for _, kind := range []string{os.Getenv("ZZKIND")} {
		var m *Net
		var err error
		batch := 1024
		if kind == "mlp" {
			m, err = NewMLP(be, Config{Dims: dims, Layers: []int{48, 64, 32}, Capacity: 4096}, rand.New(rand.NewPCG(1, 2)))
		} else {
			batch = 256
			m, err = NewCoSTCo(be, CoSTCoConfig{Dims: dims, Rank: 20, Channels: 20, Capacity: 4096}, rand.New(rand.NewPCG(1, 2)))
		}
		if err != nil {
			t.Fatal(err)
		}
		train, val := m.NewSet(cells[:290000*3], vals[:290000]), m.NewSet(cells[290000*3:], vals[290000:])
		st := time.Now()
		_, err = Train(context.Background(), m, train, val, TrainConfig{Epochs: 1, Batch: batch, Patience: 1, LR: 1e-3, Shuffle: rand.New(rand.NewPCG(5, 6)), EmbeddingOptimizer: os.Getenv("ZZOPT")})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.3f s / epoch of 290K cells", kind, time.Since(st).Seconds())
	}
}

type timedBE struct {
	*cpu.Backend
	t map[string]time.Duration
}

func (b *timedBE) tm(k string, f func()) { s := time.Now(); f(); b.t[k] += time.Since(s) }
func (b *timedBE) LinearForward(y, x, w, bias compute.F32, in, out int, relu bool) {
	b.tm(fmt.Sprintf("fwd %dx%d B=%d", in, out, x.Len()/in), func() { b.Backend.LinearForward(y, x, w, bias, in, out, relu) })
}
func (b *timedBE) LinearBackward(dx, dw, db, dy, x, w compute.F32, in, out int, maskX, accumulate bool) {
	b.tm(fmt.Sprintf("bwd %dx%d B=%d dx=%v", in, out, x.Len()/in, dx != nil), func() { b.Backend.LinearBackward(dx, dw, db, dy, x, w, in, out, maskX, accumulate) })
}
func (b *timedBE) LinearForwardMSE(pred, delta, sq, x, w, bias, y compute.F32, in int, relu bool, scale float32) {
	b.tm("fwdmse", func() { b.Backend.LinearForwardMSE(pred, delta, sq, x, w, bias, y, in, relu, scale) })
}
func (b *timedBE) Adam(p, g, m, v compute.F32, s compute.AdamStep) {
	b.tm("adam", func() { b.Backend.Adam(p, g, m, v, s) })
}
func (b *timedBE) Gather(x, table compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	b.tm("gather", func() { b.Backend.Gather(x, table, cells, order, width, layout) })
}
func (b *timedBE) ScatterRows(dtable, dx compute.F32, cells compute.I32, order, width int, layout compute.Layout) {
	b.tm("scatter", func() { b.Backend.ScatterRows(dtable, dx, cells, order, width, layout) })
}
func (b *timedBE) Fill(dst compute.F32, v float32) { b.tm("fill", func() { b.Backend.Fill(dst, v) }) }
func (b *timedBE) Copy(dst, src compute.F32)       { b.tm("copy", func() { b.Backend.Copy(dst, src) }) }

func TestZZOps(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	dims := []int{1000, 1000, 100}
	cells, vals := lowRank(rand.New(rand.NewPCG(3, 4)), dims, 300000)
	be := &timedBE{cpu.New(), map[string]time.Duration{}}
	var m *Net
	var err error
	batch := 1024
	if os.Getenv("ZZKIND") == "mlp" {
		m, err = NewMLP(be, Config{Dims: dims, Layers: []int{48, 64, 32}, Capacity: 4096}, rand.New(rand.NewPCG(1, 2)))
	} else {
		batch = 256
		m, err = NewCoSTCo(be, CoSTCoConfig{Dims: dims, Rank: 20, Channels: 20, Capacity: 4096}, rand.New(rand.NewPCG(1, 2)))
	}
	if err != nil {
		t.Fatal(err)
	}
	train, val := m.NewSet(cells[:290000*3], vals[:290000]), m.NewSet(cells[290000*3:], vals[290000:])
	st := time.Now()
	_, err = Train(context.Background(), m, train, val, TrainConfig{Epochs: 1, Batch: batch, Patience: 1, LR: 1e-3, Shuffle: rand.New(rand.NewPCG(5, 6)), EmbeddingOptimizer: os.Getenv("ZZOPT")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.3f s", time.Since(st).Seconds())
	var tot time.Duration
	for k, v := range be.t {
		t.Logf("%-40s %v", k, v)
		tot += v
	}
	t.Logf("ops total %v", tot)
}
