package dain

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"fmt"
	"io"
	"strings"

	"github.com/dainx/dainx/checkpoint"
)

// DAIN's checkpoint files are containers of package checkpoint whose first
// section, "header", is a gob-encoded ckHeader naming the dainx version,
// the configuration, the input and what the file holds (checkpoint.go says
// which sections each kind of file has). Files are written to a temporary
// name in the checkpoint directory, synced and renamed
// (tensor.AtomicWrite), so a file is either whole or absent.

// ckWriter writes one checkpoint file's sections.
type ckWriter = checkpoint.Writer

// ckFile is a checkpoint file read into memory, with its checked header.
type ckFile struct {
	*checkpoint.File
	header ckHeader
}

// errNotCheckpoint marks a file that is not a whole dainx checkpoint or is
// damaged.
var errNotCheckpoint = checkpoint.ErrNotCheckpoint

// readCkFile reads the checkpoint file path; with until not empty it stops
// after the section of that name ("header": the header), unverified. The
// file is untrusted (checkpoint.Read says what is checked); the header
// must decode and pass ckHeader.check before anything after it is read.
// Errors name the file, and wrap errNotCheckpoint.
func readCkFile(path string, until string) (*ckFile, error) {
	out := &ckFile{}
	f, err := checkpoint.ReadFile(path, until, out.readHeader)
	return out.with(f, err)
}

// readCk is readCkFile of the size bytes of f, named path in errors.
func readCk(f io.Reader, size uint64, path string, until string) (*ckFile, error) {
	out := &ckFile{}
	file, err := checkpoint.Read(f, size, path, until, out.readHeader)
	return out.with(file, err)
}

// with returns f, holding file, or err.
func (f *ckFile) with(file *checkpoint.File, err error) (*ckFile, error) {
	if err != nil {
		return nil, err
	}
	f.File = file
	return f, nil
}

// readHeader decodes and checks the header section b.
func (f *ckFile) readHeader(b []byte) error {
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&f.header); err != nil {
		return err
	}
	return f.header.check()
}

// decode gob-decodes section name into v.
func (f *ckFile) decode(name string, v any) error { return f.Decode(name, v) }

// Limits on a checkpoint header read from disk.
const (
	maxCkSettings = 1024 // settings in Config
	maxCkOrder    = 64   // modes of the input
)

// check reports a header field that no dainx writes: an unknown kind, a
// negative cell count or dimension, more than maxCkOrder modes or
// maxCkSettings settings, a fingerprint that is not 64 hex digits.
func (h *ckHeader) check() error {
	switch {
	case h.Kind != kindTrain && h.Kind != kindModel && h.Kind != kindAugmented:
		return fmt.Errorf("kind %q: want %s, %s or %s", h.Kind, kindTrain, kindModel, kindAugmented)
	case len(h.Config) > maxCkSettings:
		return fmt.Errorf("config: %d settings, over the limit of %d", len(h.Config), maxCkSettings)
	case h.Input.Cells < 0:
		return fmt.Errorf("input cells %d", h.Input.Cells)
	case len(h.Input.Dims) > maxCkOrder:
		return fmt.Errorf("input dims: %d modes, over the limit of %d", len(h.Input.Dims), maxCkOrder)
	case len(h.Input.SHA256) != 2*sha256.Size || strings.Trim(h.Input.SHA256, "0123456789abcdef") != "":
		return fmt.Errorf("input sha256 %.80q: want %d hex digits", h.Input.SHA256, 2*sha256.Size)
	}
	for m, d := range h.Input.Dims {
		if d < 0 {
			return fmt.Errorf("input dims[%d] = %d", m, d)
		}
	}
	return nil
}
