package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/gemmtune"
)

// TestCaptureSerialSplit: with the tuner on, a split GEMM met first inside
// a Capture whose serial split-K workspace would have to grow (its address
// cannot change inside a graph) runs as parts and split_k_reduce instead,
// and the graph's output equals, bit for bit, the same GEMM run eagerly
// afterwards as serial split-K. Found on the first GPU run of the tuned
// family (2026-11-26, H200): `dainx augment` with graphs and
// DAINX_GEMM_TUNE=time failed at the epoch's last, smaller batch. Skipped
// without a GPU.
func TestCaptureSerialSplit(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	o := EnvOptions(t, compute.TF32)
	o.GemmTune, o.SerialSplitK = GemmTuneModel, true
	be, err := NewWith(o)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	defer be.Close()
	// dx of a 64-wide layer with a long k (out): split over k.
	const batch, in, out = 64, 64, 4096
	if parts, _ := be.planDX(batch, in, out); parts < 2 {
		t.Skipf("dx %d×%d×%d is not split on this device", batch, in, out)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	fill := func(n int) compute.F32 {
		h := make([]float32, n)
		for i := range h {
			h[i] = float32(rng.NormFloat64())
		}
		b := be.Alloc(n)
		be.Upload(b, h)
		return b
	}
	// Scratch for the parts, sized by a wider dx run with the tuner off
	// (no serial workspace), so that only the serial workspace is missing.
	be.tune.mode = gemmtune.Off
	be.LinearBackward(be.Alloc(batch*2*in), nil, nil, fill(batch*out), fill(batch*2*in), fill(out*2*in), 2*in, out, false, false)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	be.tune.mode = gemmtune.ModelOnly
	if be.serialLen != 0 {
		t.Fatalf("the serial workspace exists (%d bytes) before the capture", be.serialLen)
	}
	x, w, dy := fill(batch*in), fill(out*in), fill(batch*out)
	dxg, dxe := be.Alloc(batch*in), be.Alloc(batch*in)
	g, err := be.Capture(func() { be.LinearBackward(dxg, nil, nil, dy, x, w, in, out, false, false) })
	if err != nil {
		t.Fatalf("Capture: %v", err)
	}
	defer g.Free()
	g.Launch()
	be.LinearBackward(dxe, nil, nil, dy, x, w, in, out, false, false)
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
	choices, _ := be.GEMMChoices()
	serial := false
	for _, c := range choices {
		if c.Shape.Op == gemmtune.DX && c.Shape.M == batch && c.Shape.N == in {
			serial = c.Serial
		}
	}
	if !serial {
		t.Skip("the tuner's choice for the dx is not serial split-K here")
	}
	hg, he := make([]float32, batch*in), make([]float32, batch*in)
	if err := be.Download(hg, dxg); err != nil {
		t.Fatal(err)
	}
	if err := be.Download(he, dxe); err != nil {
		t.Fatal(err)
	}
	for i := range he {
		if math.Float32bits(hg[i]) != math.Float32bits(he[i]) {
			t.Fatalf("dx[%d]: graph %v, eager serial split-K %v", i, hg[i], he[i])
		}
	}
}
