package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/driver"
	"github.com/dainx/dainx/cuda/gemmtune"
)

// TestGemmFamily (issue 24): on a GPU, every variant of the GEMM family
// gives the bits of the 64×64 kernel of its precision class — forward (with
// bias and ReLU), dx (with the ReLU mask) and dw (with the bias gradient),
// whole and split into parts over k, in fp32 (SIMT tiles), TF32 and 3xTF32
// (tensor-core tiles) — on the default model's shapes and on edge shapes.
// Variants with more than 48 KiB of shared memory are launched after
// raising the kernel's dynamic shared memory limit, and skipped (logged)
// where the device's opt-in limit is lower. Skipped without a GPU.
func TestGemmFamily(t *testing.T) {
	shapes := [][3]int{{1024, 150, 1024}, {1024, 1024, 128}, {300, 77, 45}, {129, 200, 65}}
	if testing.Short() {
		shapes = shapes[2:]
	}
	for _, prec := range []compute.Precision{compute.FP32, compute.TF32, compute.TF32x3} {
		be, err := NewWith(EnvOptions(t, prec))
		if err != nil {
			t.Skipf("no CUDA device: %v", err)
		}
		fam := gemmtune.Family(prec)
		for _, sh := range shapes {
			batch, in, out := sh[0], sh[1], sh[2]
			for _, op := range []gemmtune.Op{gemmtune.Forward, gemmtune.DX, gemmtune.DW} {
				for _, parts := range []int{1, 3} {
					var want []float32
					for _, v := range fam {
						got, ok := familyRun(t, be, v, op, batch, in, out, parts)
						if !ok {
							continue
						}
						if want == nil {
							want = got
							continue
						}
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%v, %s, %s, B %d I %d O %d, %d parts: element %d is %g, %s gives %g",
									prec, v.Name, op, batch, in, out, parts, i, got[i], fam[0].Name, want[i])
							}
						}
					}
				}
			}
		}
		if err := be.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// familyRun launches v's kernel of op on fixed inputs (from the shape) and
// returns its outputs: the result, or the parts when split, then db for
// dw. ok is false when the device cannot give v its shared memory.
func familyRun(t *testing.T, be *Backend, v gemmtune.Variant, op gemmtune.Op, batch, in, out, parts int) ([]float32, bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(batch*in+out), uint64(op)))
	fill := func(n int) *F32 {
		h := make([]float32, n)
		for i := range h {
			h[i] = float32(rng.NormFloat64())
			if i%7 == 0 {
				h[i] = -h[i] * h[i] // negatives for ReLU and the mask
			}
		}
		b := be.Alloc(n).(*F32)
		be.Upload(b, h)
		return b
	}
	x, w, bias, dy := fill(batch*in), fill(out*in), fill(out), fill(batch*out)
	var m, n, k int // the GEMM's output rows and columns, and its reduction
	switch op {
	case gemmtune.Forward:
		m, n, k = batch, out, in
	case gemmtune.DX:
		m, n, k = batch, in, out
	default:
		m, n, k = out, in, batch
	}
	chunk := k
	if parts > 1 {
		chunk = ((k+parts-1)/parts + 15) / 16 * 16
		parts = (k + chunk - 1) / chunk
	}
	res, part, db := be.Alloc(m*n).(*F32), be.Alloc(max(parts, 2)*m*n).(*F32), be.Alloc(out).(*F32)
	var flags int32
	if v.TC {
		flags = be.tcFlags()
	}
	var ptrs []driver.DevicePtr
	switch op {
	case gemmtune.Forward:
		ptrs, flags = []driver.DevicePtr{res.ptr, part.ptr, x.ptr, w.ptr, bias.ptr}, flags|epiRelu
	case gemmtune.DX:
		ptrs, flags = []driver.DevicePtr{res.ptr, part.ptr, dy.ptr, w.ptr, x.ptr}, flags|epiMask
	default:
		ptrs, flags = []driver.DevicePtr{res.ptr, db.ptr, part.ptr, dy.ptr, x.ptr}, flags|epiBias
	}
	name := v.Kernel(op)
	var launchErr, attrErr error
	be.do(func() {
		if _, attrErr = be.optIn(v, op); attrErr != nil {
			return
		}
		launchErr = be.launchVariant(v, op, m, n, parts, func(a *driver.Args) {
			for _, p := range ptrs {
				a.Ptr(p)
			}
			for _, i := range []int{batch, in, out, chunk} {
				a.Int32(int32(i))
			}
			a.Int32(flags)
		})
	})
	if attrErr != nil {
		t.Logf("%s: not launched (%v): skipped", v.Name, attrErr)
		return nil, false
	}
	if launchErr != nil {
		t.Fatalf("%s: %v", name, launchErr)
	}
	get := func(b *F32, n int) []float32 {
		h := make([]float32, n)
		if err := be.Download(h, b.Slice(0, n)); err != nil {
			t.Fatal(fmt.Errorf("%s: %w", name, err))
		}
		return h
	}
	var outv []float32
	if parts > 1 {
		outv = get(part, parts*m*n)
	} else {
		outv = get(res, m*n)
	}
	if op == gemmtune.DW {
		outv = append(outv, get(db, out)...)
	}
	return outv, true
}

// TestGemmTuned (issue 24): on a GPU, the Linear layers' forward and
// backward passes with DAINX_GEMM_TUNE=model and =time give, bit for bit,
// the outputs of the 64×64 kernels (=off), in every precision, on the
// default model's shapes — whole and split over k, the splits as parts
// and split_k_reduce, and serial (kernels/splitk.cuh) with
// DAINX_GEMM_SERIAL=1, in model and time mode — with dW accumulated
// (not repeatable: the model's choice) and overwritten (timed); and time
// mode records a choice for every shape, timed or cached. Skipped without
// a GPU.
func TestGemmTuned(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	layers := [][2]int{{150, 1024}, {1024, 1024}, {1024, 128}, {77, 45}}
	const batch = 1024
	for _, prec := range []compute.Precision{compute.FP32, compute.TF32, compute.TF32x3} {
		var want [][]float32
		// "serial": with Options.SerialSplitK (DAINX_GEMM_SERIAL=1).
		modes := []string{"off", "model", "model serial", "time", "time serial"}
		if testing.Short() {
			modes = modes[:3] // under the sanitizers: no timing
		}
		for _, mode := range modes {
			tuneMode, serial, _ := strings.Cut(mode, " ")
			o := EnvOptions(t, prec)
			var err error
			if o.GemmTune, err = ParseGemmTune(tuneMode); err != nil {
				t.Fatal(err)
			}
			o.SerialSplitK = serial == "serial"
			be, err := NewWith(o)
			if err != nil {
				t.Skipf("no CUDA device: %v", err)
			}
			var got [][]float32
			for _, l := range layers {
				in, out := l[0], l[1]
				rng := rand.New(rand.NewPCG(uint64(in), uint64(out)))
				fill := func(n int) compute.F32 {
					h := make([]float32, n)
					for i := range h {
						h[i] = float32(rng.NormFloat64())
					}
					b := be.Alloc(n)
					be.Upload(b, h)
					return b
				}
				x, w, bias, dy := fill(batch*in), fill(out*in), fill(out), fill(batch*out)
				y, dx, dw, db := be.Alloc(batch*out), be.Alloc(batch*in), fill(out*in), fill(out)
				be.LinearForward(y, x, w, bias, in, out, true)
				be.LinearBackward(dx, dw, db, dy, x, w, in, out, true, true) // dW accumulated
				dw2, db2 := be.Alloc(out*in), be.Alloc(out)
				be.LinearBackward(nil, dw2, db2, dy, x, w, in, out, false, false) // overwritten
				for _, b := range []compute.F32{y, dx, dw, db, dw2, db2} {
					h := make([]float32, b.Len())
					if err := be.Download(h, b); err != nil {
						t.Fatal(err)
					}
					got = append(got, h)
				}
			}
			choices, _ := be.GEMMChoices()
			// With the tuner on and serial split-K on, every split
			// GEMM on a tile body (all but simt_64x64) runs as serial
			// split-K; otherwise none.
			for _, c := range choices {
				want := tuneMode != "off" && serial == "serial" && c.Shape.Parts > 1 && c.Variant != "simt_64x64"
				if c.Serial != want {
					t.Errorf("%v, %s: %v on %s: serial split-K %v, want %v", prec, mode, c.Shape, c.Variant, c.Serial, want)
				}
			}
			if tuneMode == "time" {
				for _, c := range choices {
					if c.How != "timed" && c.How != "cached" && c.How != "model (not repeatable)" {
						t.Errorf("%v, time: %v chosen by %q", prec, c.Shape, c.How)
					}
				}
				t.Logf("%v: %d shapes: %+v", prec, len(choices), choices)
			}
			if err := be.Close(); err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = got
				continue
			}
			for i := range want {
				for j := range want[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("%v, tuning %s: output %d, element %d is %g, off gives %g", prec, mode, i, j, got[i][j], want[i][j])
					}
				}
			}
		}
	}
}
