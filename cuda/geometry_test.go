package cuda

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/cuda/driver"
)

// TestGeometryMatchesC checks that the C launchers of libdainx_kernels
// (kernels/lib/geometry.h) choose the same launch geometry as this backend
// (grid1D, the split-K plans of plan.go, influenceChunk, and the block sizes
// and limits) for every shape of a grid of batch, in, out and SM counts. It
// compiles kernels/lib/geomcheck.c with the host C compiler ($CC, else cc)
// and is skipped where there is none, or where the test binary runs away
// from the source tree. No GPU needed.
func TestGeometryMatchesC(t *testing.T) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s): %v", cc, err)
	}
	if _, err := os.Stat("../kernels/lib/geomcheck.c"); err != nil {
		// A test binary run outside the source tree (the GPU machine's
		// .dev/cuda.test); CI runs it in the tree.
		t.Skipf("no kernels/lib/geomcheck.c beside the package: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "geomcheck")
	if out, err := exec.Command(cc, "-std=c99", "-O1", "-Wall", "-Werror", "-I../kernels/lib", "-o", bin, "../kernels/lib/geomcheck.c").CombinedOutput(); err != nil {
		t.Fatalf("compiling geomcheck.c: %v\n%s", err, out)
	}
	sizes := []int{1, 2, 7, 16, 31, 32, 33, 50, 63, 64, 65, 100, 127, 128, 129, 150, 200, 255, 256, 257, 512, 1000, 1023, 1024, 1025, 2048, 4096, 10000, 65536, 1 << 20, 5_000_000}
	var in bytes.Buffer
	var want []string
	for _, sms := range []int{1, 8, 46, 80, 108, 114, 132, 144} {
		be := &Backend{sms: sms}
		for _, b := range sizes {
			for _, i := range sizes[:22] {
				for _, o := range []int{1, 8, 9, 20, 64, 128, 150, 1024, 4096} {
					fmt.Fprintf(&in, "%d %d %d %d\n", sms, b, i, o)
					fp, fc := be.planForward(b, i, o)
					xp, xc := be.planDX(b, i, o)
					wp, wc := be.planDW(b, i, o)
					dp, dc := be.planDB(b, o)
					op, oc := be.planOut1(b, i)
					want = append(want, fmt.Sprintf("fwd %d %d dx %d %d dw %d %d db %d %d out1 %d %d inf %d g1 %d g8 %d g1024 %d",
						fp, fc, xp, xc, wp, wc, dp, dc, op, oc, influenceChunk(b, o),
						be.grid1D(int64(b)*int64(i), threads).X, be.grid1D(int64(b), warpsPerBlk).X, be.grid1D(int64(b), mseThreads).X))
				}
			}
		}
	}
	shapes := strings.Split(strings.TrimSpace(in.String()), "\n")
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("geomcheck: %v", err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(want) {
		t.Fatalf("geomcheck printed %d lines for %d shapes", len(got), len(want))
	}
	bad := 0
	for k := range want {
		if got[k] != want[k] {
			if bad++; bad <= 10 {
				t.Errorf("sms, batch, in, out = %s:\n  C:  %s\n  Go: %s", shapes[k], got[k], want[k])
			}
		}
	}
	if bad == 0 {
		t.Logf("%d shapes: the C launchers and the Go backend plan the same launches", len(want))
	}
	// The constants both sides state.
	if threads != 256 || mseThreads != 1024 || warpsPerBlk != 8 || gemmTile != 64 || maxGridYZ != 65535 ||
		influenceDirectOut != 8 || influenceScratch != 16<<20 || tcBlock != (driver.Dim3{X: 128, Y: 1, Z: 1}) {
		t.Errorf("a launch constant of ops.go changed: update kernels/lib/geometry.h (and this check)")
	}
}
