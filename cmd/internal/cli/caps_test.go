package cli

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/model"
)

// TestFlagCaps: a numeric flag beyond its limit, which would overflow a
// count derived from it (ratio·|train| new cells, batch buffers), and
// -ratio 0 (no cells drawn, yet "improved") are usage errors naming the
// flag and the limit.
func TestFlagCaps(t *testing.T) {
	if dain.MaxBatch != model.MaxCapacity {
		t.Errorf("dain.MaxBatch %d, model.MaxCapacity %d: a batch that trains must load", dain.MaxBatch, model.MaxCapacity)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-ratio", "1e300"}, "-ratio 1e+300: above the limit 1000"},
		{[]string{"-ratio", "NaN"}, "-ratio NaN: want a finite number > 0"},
		{[]string{"-ratio", "0"}, "-ratio must be > 0; 0 draws no cells"},
		{[]string{"-batch", "1000000000000"}, "-batch 1000000000000: want 1…16777216 cells"},
		{[]string{"-batch", "0"}, "-batch 0: want 1…16777216 cells"},
		{[]string{"-costco-batch", "1000000000000"}, "-costco-batch 1000000000000: want 1…16777216 cells"},
		{[]string{"-epochs", "1000000000000"}, "-epochs 1000000000000: want 1…1048576"},
		{[]string{"-patience", "-3"}, "-patience -3: want 1…1048576"},
		{[]string{"-rank", "1000000000000"}, "-rank 1000000000000: want 1…1048576"},
		{[]string{"-channels", "1000000000000"}, "-channels 1000000000000: want 1…1048576"},
		{[]string{"-layers", "3000000000,16"}, "-layers 3000000000,16: width 3000000000 above the limit 1048576"},
	} {
		fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		a := NewAugment(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := a.Finish(fs, io.Discard)
		if err == nil || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
	// In range: no error.
	fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	a := NewAugment(fs)
	if err := fs.Parse([]string{"-ratio", "1000", "-batch", "16777216"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Finish(fs, io.Discard); err != nil {
		t.Errorf("limits themselves: %v", err)
	}
}
