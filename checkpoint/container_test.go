package checkpoint

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// sample writes a file with a header and one section of each kind.
func sample(t *testing.T) []byte {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Gob("header", struct{ Kind string }{"test"})
	w.F32("params", []float32{1, -2.5, float32(math.Inf(1))})
	w.I32("perm", []int32{3, 1, 2, -7})
	w.F64("val", make([]float64, 20000)) // spans chunks of 64 KiB
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRoundTrip: every section reads back with its bits, and the header
// callback sees the header's bytes before anything after it is read.
func TestRoundTrip(t *testing.T) {
	b := sample(t)
	var head struct{ Kind string }
	var sawHeader bool
	f, err := Read(bytes.NewReader(b), uint64(len(b)), "x.ckpt", "", func(h []byte) error { sawHeader = len(h) > 0; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Decode("header", &head); err != nil || head.Kind != "test" || !sawHeader {
		t.Fatalf("header %+v, %v, seen %v", head, err, sawHeader)
	}
	if p := f.F32["params"]; len(p) != 3 || p[1] != -2.5 || !math.IsInf(float64(p[2]), 1) {
		t.Errorf("params %v", p)
	}
	if p := f.I32["perm"]; len(p) != 4 || p[3] != -7 {
		t.Errorf("perm %v", p)
	}
	if v := f.F64["val"]; len(v) != 20000 {
		t.Errorf("val: %d elements", len(v))
	}
	if err := f.Decode("missing", &head); !errors.Is(err, ErrNotCheckpoint) {
		t.Errorf("a missing section: %v", err)
	}
	// until stops after the header: no bulk section is read.
	f, err = Read(bytes.NewReader(b), uint64(len(b)), "x.ckpt", "header", nil)
	if err != nil || len(f.F32) != 0 {
		t.Errorf("until header: %v, %d float32 sections", err, len(f.F32))
	}
	// A header the caller refuses refuses the file, naming it.
	_, err = Read(bytes.NewReader(b), uint64(len(b)), "x.ckpt", "", func([]byte) error { return errors.New("kind test") })
	if !errors.Is(err, ErrNotCheckpoint) || !strings.Contains(err.Error(), "x.ckpt") || !strings.Contains(err.Error(), "kind test") {
		t.Errorf("a refused header: %v", err)
	}
}

// TestDamaged: every truncation and every flipped byte is refused with
// ErrNotCheckpoint (or, for the format field, a newer-format error), and
// never panics or allocates past the file's size.
func TestDamaged(t *testing.T) {
	b := sample(t)
	for n := 0; n < len(b); n += 1 + n/50 {
		if _, err := Read(bytes.NewReader(b[:n]), uint64(n), "x.ckpt", "", nil); !errors.Is(err, ErrNotCheckpoint) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
	for i := 0; i < len(b); i += 1 + i/40 {
		c := bytes.Clone(b)
		c[i] ^= 0x41
		_, err := Read(bytes.NewReader(c), uint64(len(c)), "x.ckpt", "", nil)
		if err == nil {
			t.Fatalf("byte %d flipped: read without error", i)
		}
		if !errors.Is(err, ErrNotCheckpoint) && !strings.Contains(err.Error(), "newer dainx") {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := Read(bytes.NewReader(append(bytes.Clone(b), 0)), uint64(len(b)+1), "x.ckpt", "", nil); !errors.Is(err, ErrNotCheckpoint) {
		t.Errorf("a byte after the checksum: %v", err)
	}
}
