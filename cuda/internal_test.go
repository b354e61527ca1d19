package cuda

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/driver"
	"github.com/dainx/dainx/kernels/ptx"
)

var (
	entryRE = regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)
	paramRE = regexp.MustCompile(`(?m)^\s*\.param \.(\w+) (\w+)_param_(\d+)`)
)

// ptxParamSizes returns the entry names of a PTX module and the sizes of
// the parameters of its entry.
func ptxParamSizes(src string) ([]string, []int, error) {
	var entries []string
	for _, m := range entryRE.FindAllStringSubmatch(src, -1) {
		entries = append(entries, m[1])
	}
	var sizes []int
	for i, m := range paramRE.FindAllStringSubmatch(src, -1) {
		if m[3] != fmt.Sprint(i) {
			return nil, nil, fmt.Errorf("parameter %s_param_%s out of order", m[2], m[3])
		}
		switch m[1] {
		case "u64", "s64", "b64", "f64":
			sizes = append(sizes, 8)
		case "u32", "s32", "b32", "f32":
			sizes = append(sizes, 4)
		default:
			return nil, nil, fmt.Errorf("parameter %d of type .%s", i, m[1])
		}
	}
	return entries, sizes, nil
}

// TestKernelsMatchPTX checks, without a GPU, that every kernel has embedded
// PTX with exactly one entry of its name, and that its launcher packs
// arguments of exactly the sizes the PTX entry declares.
func TestKernelsMatchPTX(t *testing.T) {
	files, err := ptx.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(f.Name(), ".ptx"))
	}
	if !slices.Equal(names, kernelNames[:]) {
		t.Errorf("embedded PTX %v, kernels %v (run `make kernels`)", names, kernelNames)
	}
	for k, name := range kernelNames {
		b, err := ptx.FS.ReadFile(name + ".ptx")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		src := string(b)
		if strings.Contains(src, "//") {
			t.Errorf("%s.ptx has comments; it was not built by scripts/build-kernels.sh", name)
		}
		entries, sizes, err := ptxParamSizes(src)
		if err != nil {
			t.Errorf("%s.ptx: %v", name, err)
			continue
		}
		if !slices.Equal(entries, []string{name}) {
			t.Errorf("%s.ptx: entries %v, want [%s]", name, entries, name)
		}
		if !slices.Equal(sizes, kernelParamSizes[k]) {
			t.Errorf("%s: PTX parameter sizes %v, launcher table %v", name, sizes, kernelParamSizes[k])
		}
		be := &Backend{args: driver.NewArgs()}
		if err := launchZero[k](be); err == nil || !strings.Contains(err.Error(), "not loaded") {
			t.Errorf("%s: launch without a module returned %v", name, err)
		}
		var packed []int
		for i := 0; i < be.args.Len(); i++ {
			packed = append(packed, be.args.Size(i))
		}
		if !slices.Equal(packed, sizes) {
			t.Errorf("%s: launcher packs %v, PTX declares %v", name, packed, sizes)
		}
	}
}

func TestSizeClass(t *testing.T) {
	prev := int64(0)
	for _, b := range []int64{1, 4, 511, 512, 513, 1000, 1024, 1025, 4096, 5000, 1 << 20, 1<<20 + 1, 3 << 30, 1<<40 - 7} {
		c := sizeClass(b)
		if c < b || c < 512 {
			t.Errorf("sizeClass(%d) = %d, smaller than the request", b, c)
		}
		if b > 512 && float64(c) > 1.25*float64(b)+1 {
			t.Errorf("sizeClass(%d) = %d, more than 25%% over", b, c)
		}
		if c%4 != 0 {
			t.Errorf("sizeClass(%d) = %d, not a multiple of 4", b, c)
		}
		if c < prev {
			t.Errorf("sizeClass(%d) = %d, below the class of a smaller request", b, c)
		}
		prev = c
		if sizeClass(c) != c {
			t.Errorf("sizeClass(sizeClass(%d)) = %d, want %d", b, sizeClass(c), c)
		}
	}
}

func TestSplit(t *testing.T) {
	be := &Backend{sms: 132}
	for _, c := range []struct{ blocks, k, min int }{
		{1, 1024, 256}, {2, 1024, 256}, {32, 1024, 256}, {256, 1024, 256}, {300, 1 << 20, 256},
		{1, 100, 256}, {1, 1 << 30, 256}, {4, 1 << 20, 1024}, {1, 1, 16}, {48, 1024, 256},
	} {
		parts, chunk := be.split(c.blocks, c.k, c.min)
		switch {
		case parts < 1 || parts > maxGridYZ:
			t.Errorf("split(%v) = %d parts", c, parts)
		case parts > 1 && (chunk%16 != 0 || chunk < c.min):
			t.Errorf("split(%v): chunk %d", c, chunk)
		case parts*chunk < c.k || (parts-1)*chunk >= c.k:
			t.Errorf("split(%v) = %d×%d does not cover %d exactly", c, parts, chunk, c.k)
		case c.blocks >= be.sms && parts != 1:
			t.Errorf("split(%v) = %d parts, want 1 for a grid of a block per SM or more", c, parts)
		}
	}
}

func TestGemmGridLimit(t *testing.T) {
	g := gemmGrid("test", 1000, 65, 3)
	if g != (driver.Dim3{X: 16, Y: 2, Z: 3}) {
		t.Errorf("gemmGrid(1000, 65, 3) = %+v", g)
	}
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "cuda: test: width") {
			t.Errorf("recover() = %v", r)
		}
	}()
	gemmGrid("test", 1, maxGridYZ*gemmTile+1, 1)
}

// BenchmarkLinear times LinearForward and LinearBackward (dx, dw and db) at
// the shapes of the default MLP (150→1024→1024→128→1, batch 1024) in every
// precision mode; it skips without a GPU. Run it with
//
//	cuda.test -test.run '^$' -test.bench Linear -test.benchtime 200x
func BenchmarkLinear(b *testing.B) {
	const batch = 1024
	layers := [][2]int{{150, 1024}, {1024, 1024}, {1024, 128}, {128, 1}}
	for _, p := range []compute.Precision{compute.FP32, compute.TF32, compute.TF32x3} {
		be, err := NewWith(EnvOptions(b, p))
		if err != nil {
			b.Skipf("no CUDA device: %v", err)
		}
		rnd := func(n int) compute.F32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(i%7-3) / 3
			}
			f := be.Alloc(n)
			be.Upload(f, v)
			return f
		}
		for l, io := range layers {
			in, out := io[0], io[1]
			x, w, bias, y := rnd(batch*in), rnd(out*in), rnd(out), be.Alloc(batch*out)
			dy, dx, dw, db := rnd(batch*out), be.Alloc(batch*in), be.Alloc(out*in), be.Alloc(out)
			name := fmt.Sprintf("%s/%d-%d", p, in, out)
			run := func(what string, f func()) {
				b.Run(name+"/"+what, func(b *testing.B) {
					f()
					if err := be.Sync(); err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						f()
					}
					if err := be.Sync(); err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
				})
			}
			run("forward", func() { be.LinearForward(y, x, w, bias, in, out, out > 1) })
			run("backward", func() { be.LinearBackward(dx, dw, db, dy, x, w, in, out, l > 0, false) })
			run("dx", func() { be.LinearBackward(dx, nil, nil, dy, x, w, in, out, l > 0, false) })
			run("dwdb", func() { be.LinearBackward(nil, dw, db, dy, x, w, in, out, false, false) })
		}
		be.Close()
	}
}
