package tensor

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestManyFields: a first data line of more fields than a tensor of
// MaxOrder modes has is refused on that line, by the serial and the
// parallel parser alike, and before anything is sized by its fields:
// two such lines of 300,001 fields (1.2 MB) used to ask for a block of
// 1025 cells × 300,000 indices (1.2 GB; a 12 MB file of 3 million fields
// a line asked for 12 GB). A later line's fields are only counted.
func TestManyFields(t *testing.T) {
	line := func(fields int) string { return strings.Repeat("0 ", fields-1) + "1\n" }
	for _, tc := range []struct {
		name, in, want string
	}{
		{"limit+1", line(MaxOrder + 2), fmt.Sprintf("f:1: %d fields: a tensor has at most %d modes", MaxOrder+2, MaxOrder)},
		{"after comments", "# c\n\n" + line(5000), "f:3: 5000 fields: a tensor has at most 1024 modes"},
		{"later line", "0 0 1\n" + line(5000), "f:2: want 3 fields (2 indices and a value), got 5000"},
	} {
		for _, f := range []Format{TSV, TNS} {
			_, err := checkSame(t, tc.name, []byte(tc.in), ReadOptions{Format: f, IndexBase: 0})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			}
		}
	}
	// At the limit the tensor is read.
	c, err := Read(strings.NewReader(line(MaxOrder+1)), "f", ReadOptions{Format: TSV, IndexBase: -1})
	if err != nil || c.Order() != MaxOrder {
		t.Fatalf("order %d: %v", MaxOrder, err)
	}
	// Nothing sized by the fields: two lines of 300,001 fields.
	big := []byte(line(300001) + line(300001))
	for _, opt := range []ReadOptions{{Format: TSV, IndexBase: -1}, {Format: TSV, IndexBase: -1, serial: true}} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Read(bytes.NewReader(big), "f", opt)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.HasPrefix(err.Error(), "f:1: 300001 fields") {
			t.Errorf("serial %v: %v", opt.serial, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
			t.Errorf("serial %v: %d MiB allocated for a 1.2 MB input", opt.serial, got>>20)
		}
	}
}

// TestTruncatedGzip: a gzip stream cut anywhere is reported as a
// truncated stream after the last whole line, never as the short line
// the cut leaves ("want 4 fields, got 3"), by both parsers.
func TestTruncatedGzip(t *testing.T) {
	var text strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&text, "%d\t%d\t%d\t%d.25\n", i, i%97, i%13, i%7)
	}
	z := gz(t, []byte(text.String()))
	for cut := 40; cut < len(z)-8; cut += len(z) / 17 {
		for _, serial := range []bool{true, false} {
			_, err := Read(bytes.NewReader(z[:cut]), "tr.tsv.gz", ReadOptions{Format: TSV, IndexBase: -1, serial: serial})
			if err == nil || !strings.HasPrefix(err.Error(), "tr.tsv.gz: truncated gzip stream (unexpected EOF) after line ") {
				t.Errorf("cut at %d of %d, serial %v: %v", cut, len(z), serial, err)
			}
		}
		checkSame(t, fmt.Sprintf("cut %d", cut), z[:cut], ReadOptions{Format: TSV, IndexBase: -1})
	}
}
