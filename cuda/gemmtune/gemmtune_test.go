package gemmtune

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
)

var precs = []compute.Precision{compute.FP32, compute.TF32, compute.TF32x3}

func best(t *testing.T, d Device, s Shape) Estimate {
	t.Helper()
	es := Rank(d, s)
	if !es[0].Fits {
		t.Fatalf("%s on %s: no variant fits", s, d.Name)
	}
	return es[0]
}

// TestRankSane checks the model's choices on the recorded devices: small
// M prefers the small tile, a large square the largest, and the ranking is
// sorted and complete.
func TestRankSane(t *testing.T) {
	for name, d := range Known {
		for _, p := range precs {
			for _, m := range []int{32, 64, 128} {
				small := best(t, d, Shape{Op: Forward, M: m, N: 512, K: 1024, Parts: 1, Precision: p})
				if small.BM != 64 || small.BN != 64 {
					t.Errorf("%s %v: M = %d, N = 512 chose %s, want the 64x64 tile", name, p, m, small.Name)
				}
			}
			// A large square: a 128-row tile (fewer operand reads per
			// output), and 128x128 within 5% of the best (the two 128-row
			// tiles differ by wave quantization only).
			sq := Shape{Op: Forward, M: 8192, N: 8192, K: 4096, Parts: 1, Precision: p}
			big := best(t, d, sq)
			if big.BM != 128 && p == compute.TF32 { // fp32, 3xTF32: pipe-bound, tiles alike per FLOP
				t.Errorf("%s %v: 8192² chose %s, want a 128-row tile", name, p, big.Name)
			}
			for _, e := range Rank(d, sq) {
				if e.BN == 128 && e.Micros > 1.05*big.Micros {
					t.Errorf("%s %v: 8192²: %s predicted %.0f µs, best %s %.0f µs", name, p, e.Name, e.Micros, big.Name, big.Micros)
				}
			}
			es := Rank(d, Shape{Op: DW, M: 1024, N: 1024, K: 1024, Parts: 1, Precision: p})
			if len(es) != len(Family(p)) {
				t.Fatalf("%s %v: %d estimates for %d variants", name, p, len(es), len(Family(p)))
			}
			for i := 1; i < len(es); i++ {
				if es[i].Fits && es[i].Micros < es[i-1].Micros {
					t.Errorf("%s %v: ranking not sorted: %s %.1f µs after %s %.1f µs", name, p, es[i].Name, es[i].Micros, es[i-1].Name, es[i-1].Micros)
				}
				if es[i].Fits && !es[i-1].Fits {
					t.Errorf("%s %v: %s fits but is ranked after %s, which does not", name, p, es[i].Name, es[i-1].Name)
				}
			}
			for _, e := range es {
				if e.Fits && (e.Micros < LaunchMicros || e.BlocksPerSM < 1 || e.Blocks < 1) {
					t.Errorf("%s %v %s: implausible estimate %+v", name, p, e.Name, e)
				}
			}
		}
	}
}

// TestRankNeverChoosesMisfits checks that a variant whose shared memory
// exceeds the device's opt-in limit, or that needs tensor cores the device
// lacks, is never ranked before one that fits, and says why.
func TestRankNeverChoosesMisfits(t *testing.T) {
	small := Known["l4"]
	small.Name, small.SmemOptIn = "48 KiB opt-in", 48<<10
	old := Known["a100"]
	old.Name, old.Major, old.Minor = "compute 7.5", 7, 5
	for _, p := range precs {
		for _, s := range StepShapes([]int{150, 1024, 1024, 128}, 1024, small.SMs, p) {
			es := Rank(small, s)
			for i, e := range es {
				fits := e.SmemBytes(s.Op) <= small.SmemOptIn
				if e.Fits != fits {
					t.Errorf("%s %s: Fits = %v with %d bytes of shared memory", s, e.Name, e.Fits, e.SmemBytes(s.Op))
				}
				if !e.Fits && (i == 0 || e.Why == "") {
					t.Errorf("%s: misfit %s at rank %d (why %q)", s, e.Name, i, e.Why)
				}
			}
			if p != compute.FP32 && es[0].Name != Family(p)[0].Name {
				t.Errorf("%s on a 48 KiB device chose %s, want %s", s, es[0].Name, Family(p)[0].Name)
			}
		}
		if p != compute.FP32 {
			for _, e := range Rank(old, Shape{Op: Forward, M: 1024, N: 1024, K: 1024, Parts: 1, Precision: p}) {
				if e.Fits {
					t.Errorf("%v: %s fits a compute 7.5 device", p, e.Name)
				}
			}
		}
	}
	// Every variant of the family fits the three recorded devices.
	for name, d := range Known {
		for _, p := range precs {
			for _, e := range Rank(d, Shape{Op: DW, M: 1024, N: 1024, K: 1024, Parts: 1, Precision: p}) {
				if !e.Fits {
					t.Errorf("%s %v: %s does not fit: %s", name, p, e.Name, e.Why)
				}
			}
		}
	}
}

// TestRankDefaultStep logs the model's choice for every GEMM of the default
// step on the recorded devices (go test -v) and checks that the skinny
// layers, whose grids have fewer 128-row tiles than SMs, keep a tile that
// gives at least one block per SM.
func TestRankDefaultStep(t *testing.T) {
	for _, name := range []string{"h100", "a100", "l4"} {
		d := Known[name]
		for _, p := range precs {
			for _, s := range StepShapes([]int{150, 1024, 1024, 128}, 1024, d.SMs, p) {
				e := best(t, d, s)
				t.Logf("%s %-40s %-13s %6.1f µs  %4d blocks  %d/SM  %s", name, s, e.Name, e.Micros, e.Blocks, e.BlocksPerSM, e.Bound)
				if e.Blocks < d.SMs/2 && Tiles64(s.M, s.N)*s.Parts >= d.SMs {
					t.Errorf("%s %s: %s leaves most SMs idle (%d blocks) where 64x64 would fill them", name, s, e.Name, e.Blocks)
				}
			}
		}
	}
}

func TestSplitAndStepShapes(t *testing.T) {
	if p, c := Split(132, 300, 1024, 128); p != 1 || c != 1024 {
		t.Errorf("Split with more blocks than SMs = %d, %d; want 1, 1024", p, c)
	}
	p, c := Split(132, 32, 1024, 128)
	if p < 2 || c%16 != 0 || c < 128 || (1024+c-1)/c != p {
		t.Errorf("Split(132, 32, 1024, 128) = %d, %d", p, c)
	}
	ss := StepShapes([]int{150, 1024, 128}, 1024, 132, compute.TF32)
	if len(ss) != 6 {
		t.Fatalf("%d shapes for two layers, want 6", len(ss))
	}
	want := []Shape{{Op: Forward, M: 1024, N: 1024, K: 150}, {Op: DX, M: 1024, N: 150, K: 1024}, {Op: DW, M: 1024, N: 150, K: 1024}}
	for i, w := range want {
		g := ss[i]
		if g.Op != w.Op || g.M != w.M || g.N != w.N || g.K != w.K || g.Parts < 1 || g.Precision != compute.TF32 {
			t.Errorf("shape %d = %s, want %v %dx%dx%d", i, g, w.Op, w.M, w.N, w.K)
		}
	}
}

func TestParseMode(t *testing.T) {
	for s, want := range map[string]Mode{"": Time, "time": Time, "TIME": Time, " model ": ModelOnly, "off": Off} {
		if m, err := ParseMode(s); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", s, m, err, want)
		}
	}
	if _, err := ParseMode("fast"); err == nil || !strings.Contains(err.Error(), `"fast": want time, model or off`) {
		t.Errorf("ParseMode(fast) err = %v, want one naming the value and the choices", err)
	}
}

func testKey() Key {
	return Key{GPU: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0, SMs: 132, Driver: 12040, PTX: "abc123",
		Shape: Shape{Op: DW, M: 1024, N: 150, K: 1024, Parts: 2, Precision: compute.TF32x3}}
}

func TestKeyContents(t *testing.T) {
	k := testKey()
	s := k.String()
	for _, part := range []string{"NVIDIA H100 80GB HBM3", "cc=9.0", "sms=132", "driver=12040", "ptx=abc123", "op=dw", "m=1024", "n=150", "k=1024", "parts=2", "prec=" + compute.TF32x3.String()} {
		if !strings.Contains(s, part) {
			t.Errorf("key %q lacks %q", s, part)
		}
	}
	// Each field changes the key.
	for i, f := range []func(*Key){
		func(k *Key) { k.GPU = "NVIDIA A100" }, func(k *Key) { k.Minor = 9 }, func(k *Key) { k.SMs = 114 },
		func(k *Key) { k.Driver = 12050 }, func(k *Key) { k.PTX = "abc124" }, func(k *Key) { k.Shape.Op = DX },
		func(k *Key) { k.Shape.M++ }, func(k *Key) { k.Shape.N++ }, func(k *Key) { k.Shape.K++ },
		func(k *Key) { k.Shape.Parts = 1 }, func(k *Key) { k.Shape.Precision = compute.TF32 },
	} {
		k2 := testKey()
		f(&k2)
		if k2.String() == s {
			t.Errorf("change %d leaves the key unchanged", i)
		}
	}
}

func TestCacheRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "gemm-tune.json")
	c, err := Open(path)
	if err != nil || c.Len() != 0 {
		t.Fatalf("Open(missing) = %d entries, %v", c.Len(), err)
	}
	k := testKey()
	if err := c.Put(k, Entry{Variant: "tc_128x64", Micros: map[string]float64{"tc_128x64": 10.5, "tc_64x64": 12}}); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := c2.Get(k)
	if !ok || e.Variant != "tc_128x64" || e.Micros["tc_64x64"] != 12 {
		t.Fatalf("round trip: %+v, %v", e, ok)
	}
	k.Shape.M++
	if _, ok := c2.Get(k); ok {
		t.Error("another shape hit the cache")
	}
	// No temporary files are left behind.
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*"))
	if len(files) != 1 {
		t.Errorf("cache directory holds %v", files)
	}
	// A malformed file gives an empty, usable cache and an error.
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	c3, err := Open(path)
	if err == nil || c3 == nil || c3.Len() != 0 {
		t.Errorf("Open(malformed) = %v, %v", c3, err)
	}
}

func TestCacheUnwritable(t *testing.T) {
	// The cache directory cannot be created: its parent is a regular file
	// (as unwritable for root as for anyone).
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := Open(filepath.Join(file, "dainx", "gemm-tune.json")) // unreadable: an empty cache and an error
	if c == nil || c.Len() != 0 {
		t.Fatal("Open of an unreadable path gave no usable cache")
	}
	k := testKey()
	if err := c.Put(k, Entry{Variant: "tc_64x64"}); err == nil {
		t.Error("Put into an unwritable directory returned no error")
	}
	if e, ok := c.Get(k); !ok || e.Variant != "tc_64x64" {
		t.Errorf("the entry is not kept in memory: %+v, %v", e, ok)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	t.Setenv("HOME", "/tmp/home")
	p, err := DefaultPath()
	if err != nil {
		t.Skip(err)
	}
	if runtime.GOOS == "linux" && p != "/tmp/xdg/dainx/gemm-tune.json" {
		t.Errorf("DefaultPath = %q", p)
	}
}

func TestVariants(t *testing.T) {
	for _, p := range precs {
		fam := Family(p)
		if fam[0].BM != 64 || fam[0].BN != 64 {
			t.Errorf("%v: the first variant is %s, want today's 64x64", p, fam[0].Name)
		}
		for _, v := range fam {
			if v.TC != (p != compute.FP32) {
				t.Errorf("%v: %s TC = %v", p, v.Name, v.TC)
			}
			if got, ok := Lookup(p, v.Name); !ok || got.Name != v.Name {
				t.Errorf("Lookup(%v, %s) failed", p, v.Name)
			}
			for _, op := range []Op{Forward, DX, DW} {
				if _, err := os.Stat(filepath.Join("..", "..", "kernels", v.Kernel(op)+".cu")); err != nil {
					t.Errorf("%s %v: %v", v.Name, op, err)
				}
			}
		}
	}
}
