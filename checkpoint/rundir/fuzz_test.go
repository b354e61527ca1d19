package rundir

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/checkpoint"
	"github.com/dainx/dainx/tensor"
)

// augRecord is a record of the new cells as package dain's is made: the
// counts the checks read, and fields of the report besides.
type augRecord struct {
	RMSEBefore float64
	BestEpoch  int
	NAug       int
	Total      int
	Dims       []int
}

func (r *augRecord) Counts() (n, total int, dims []int) { return r.NAug, r.Total, r.Dims }

// ckSample returns a whole augmented-cells checkpoint file of a run on
// input x, as a Dir writes it.
func ckSample(t testing.TB, x *tensor.COO, tweak func(*augRecord, *tensor.COO)) []byte {
	aug := &tensor.COO{Dims: x.Dims, Idx: []int32{1, 2, 0, 3}, Val: []float64{0.5, -1}}
	r := augRecord{RMSEBefore: 0.9, BestEpoch: 2, NAug: 2, Dims: x.Dims}
	if tweak != nil {
		tweak(&r, aug)
	}
	h := ckHeader{Dainx: "test", Kind: KindAugmented, Config: []ckField{{"-ratio", "0.5"}}, Input: Fingerprint(x, "x.tsv"), Backend: "cpu"}
	var b bytes.Buffer
	w := checkpoint.NewWriter(&b)
	w.Gob("header", h)
	w.Gob("augmented", r)
	w.I32("idx", aug.Idx)
	w.F64("val", aug.Val)
	w.F32("params", []float32{1, 2, 3})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// ckInputSample is a small input tensor of dims 4×5.
func ckInputSample() *tensor.COO {
	return &tensor.COO{Dims: []int{4, 5}, Idx: []int32{0, 0, 1, 1, 3, 4}, Val: []float64{1, 2, 3}}
}

// FuzzReadCheckpoint: the checkpoint reader and the checks of what it
// read never panic, never allocate more than the file's size allows, and
// refuse what they refuse as not a whole checkpoint file, naming it.
func FuzzReadCheckpoint(f *testing.F) {
	x := ckInputSample()
	good := ckSample(f, x, nil)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:20])
	f.Add([]byte(checkpoint.Magic + "\x01\x00\x00\x00"))
	f.Add(ckSample(f, x, func(r *augRecord, a *tensor.COO) { r.NAug = 1 << 40 }))
	f.Add(ckSample(f, x, func(r *augRecord, a *tensor.COO) { a.Idx[0] = 99 }))
	c := New("ck", Header{Config: []Field{{"-ratio", "0.5"}}, Input: Fingerprint(x, "x.tsv")}, Run{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzCk(t, c, x, b)
		if len(b) > sha256.Size {
			// The same bytes with a checksum that matches, so that
			// mutations reach the records' decoders.
			body := b[:len(b)-sha256.Size]
			sum := sha256.Sum256(body)
			fuzzCk(t, c, x, append(append([]byte(nil), body...), sum[:]...))
		}
	})
}

// fuzzCk is one input of FuzzReadCheckpoint.
func fuzzCk(t *testing.T, c *Dir, x *tensor.COO, b []byte) {
	{
		file, err := Read(bytes.NewReader(b), uint64(len(b)), "f.ckpt", "")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.ckpt: ") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		n := 0
		for _, v := range file.F32 {
			n += 4 * len(v)
		}
		for _, v := range file.I32 {
			n += 4 * len(v)
		}
		for _, v := range file.F64 {
			n += 8 * len(v)
		}
		for _, v := range file.Gob {
			n += len(v)
		}
		if n > len(b) {
			t.Fatalf("%d bytes of sections from a file of %d", n, len(b))
		}
		c.Compatible(file.Header, "f.ckpt")
		var tr trainRecord
		file.Decode("train", &tr)
		var mr modelRecord
		file.Decode("model", &mr)
		var r augRecord
		if file.Decode("augmented", &r) == nil {
			aug := &tensor.COO{Dims: r.Dims, Idx: file.I32["idx"], Val: file.F64["val"]}
			if checkAugmented(r.NAug, r.Total, aug, x.Dims) == nil && len(aug.Val) > 0 {
				if err := aug.Validate(); err != nil {
					t.Fatalf("augmented cells accepted, but %v", err)
				}
			}
		}
	}
}

// TestCheckpointLies: a checkpoint file or manifest that lies about a
// size, a count or a field is refused as not a whole checkpoint, naming
// the file and the field, before anything is allocated for it.
func TestCheckpointLies(t *testing.T) {
	x := ckInputSample()
	good := ckSample(t, x, nil)
	// The count of the "params" section (float32), claiming 2^40 elements:
	// its 8-byte count follows the name and the kind byte.
	at := bytes.Index(good, []byte("\x06params")) + 1 + len("params") + 1
	huge := append([]byte(nil), good...)
	copy(huge[at:], []byte{0, 0, 0, 0, 0, 1, 0, 0})
	// A count the file's size allows, but not the bytes left after it.
	near := append([]byte(nil), good...)
	n := uint64(len(good)/4 - 1)
	binary.LittleEndian.PutUint64(near[at:], n)
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"count over the file": {huge, `section "params" claims 1099511627776 elements of 4 bytes`},
		"count over the rest": {near, fmt.Sprintf(`section "params" claims %d elements of 4 bytes at byte %d`, n, at+8)},
		"cells outside dims":  {ckSample(t, x, func(r *augRecord, a *tensor.COO) { a.Idx[0] = 99 }), "idx: cell 0's index 99 of mode 0 is outside 0…3"},
		"n_aug lie":           {ckSample(t, x, func(r *augRecord, a *tensor.COO) { r.NAug = 1 << 40 }), "2 values for 1099511627776 cells"},
		"dims lie":            {ckSample(t, x, func(r *augRecord, a *tensor.COO) { r.Dims = []int{4, 5, 6} }), "dims [4 5 6]; the input's are [4 5]"},
		"value not finite":    {ckSample(t, x, func(r *augRecord, a *tensor.COO) { a.Val[1] = posInf() }), "val: cell 1's value +Inf is not finite"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "augmented.ckpt")
		if err := os.WriteFile(path, c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		ck := New(dir, Header{Config: []Field{{"-ratio", "0.5"}}, Input: Fingerprint(x, "x.tsv")}, Run{})
		_, _, err := ck.LoadAugmented(&augRecord{})
		if err == nil || !errors.Is(err, ErrNotCheckpoint) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error naming %s and %q", name, err, path, c.want)
		}
	}
	for name, c := range map[string]struct{ manifest, want string }{
		"ranks 0":      {`{"kind": "mpi", "ranks": 0}`, "ranks 0: want 1 to"},
		"ranks huge":   {`{"ranks": 4294967296}`, "ranks 4294967296: want 1 to"},
		"kind unknown": {`{"kind": "cluster", "ranks": 2}`, `kind "cluster"`},
		"cells":        {`{"kind": "single", "cells": -1}`, "cells -1"},
		"too big":      {`{"kind": "single", "input": "` + strings.Repeat("x", maxManifestBytes) + `"}`, "more than 65536 bytes"},
		"not json":     {`ranks: 2`, "invalid character"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, ckManifestName)
		if err := os.WriteFile(path, []byte(c.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := checkpointKind(dir)
		if err == nil || !errors.Is(err, ErrNotCheckpoint) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("manifest %s: %v; want an error naming %s and %q", name, err, path, c.want)
		}
	}
}

func posInf() float64 { var z float64; return 1 / z }
