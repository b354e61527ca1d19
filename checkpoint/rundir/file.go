package rundir

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dainx/dainx/checkpoint"
	"github.com/dainx/dainx/tensor"
)

// A run's checkpoint files are containers of package checkpoint whose
// first section, "header", is a gob-encoded Header naming the dainx
// version, the configuration, the input and what the file holds (Dir says
// which sections each kind of file has). Files are written to a temporary
// name in the checkpoint directory, synced and renamed
// (tensor.AtomicWrite), so a file is either whole or absent.

// The kinds of file (Header.Kind).
const (
	// KindTrain is the state of an unfinished training stage after its
	// last epoch: <stage>.train.ckpt.
	KindTrain = "train"
	// KindModel is a finished model with its TracIn scores:
	// <stage>.done.ckpt.
	KindModel = "model"
	// KindAugmented is the new cells with what the report needs of the
	// steps before them: augmented.ckpt.
	KindAugmented = "augmented"
)

// Header is the first section of every checkpoint file. Its type keeps
// the name ckHeader (and Field and Input theirs), which gob writes into
// every file.
type Header = ckHeader

// Field is one setting of a run's configuration in a Header, as
// flag = value.
type Field = ckField

// Input is the fingerprint of an input tensor (Fingerprint).
type Input = ckInput

type ckHeader struct {
	Dainx   string    // the program's version
	Kind    string    // KindTrain, KindModel or KindAugmented
	Stage   string    // the stage it belongs to
	Config  []ckField // the configuration, as flag = value
	Input   ckInput
	Backend string // the backend's device, in words (a difference is reported, not refused)
}

type ckField struct{ Name, Value string }

type ckInput struct {
	Name   string
	Cells  int
	Dims   []int
	SHA256 string // of the dims, the indices (int32) and the values (float64 bits), little endian
}

func (in ckInput) String() string {
	return fmt.Sprintf("%s (%d cells, dims %v, SHA-256 %.16s…)", in.Name, in.Cells, in.Dims, in.SHA256)
}

// Fingerprint returns x's Input, named name: its cell count, its dims and
// the SHA-256 (64 hex digits) of its dims (uint64s), indices (int32s) and
// values (float64 bits), little endian. It reads every cell once.
func Fingerprint(x *tensor.COO, name string) Input {
	h := sha256.New()
	buf := make([]byte, 0, 1<<16)
	flush := func(force bool) {
		if force || len(buf) > cap(buf)-8 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(x.Dims)))
	for _, d := range x.Dims {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(d))
	}
	for _, i := range x.Idx {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(i))
		flush(false)
	}
	for _, v := range x.Val {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		flush(false)
	}
	flush(true)
	return ckInput{Name: name, Cells: x.NNZ(), Dims: append([]int(nil), x.Dims...), SHA256: hex.EncodeToString(h.Sum(nil))}
}

// File is a checkpoint file read into memory, with its checked header.
type File struct {
	*checkpoint.File
	Header Header
}

// ErrNotCheckpoint marks a file that is not a whole dainx checkpoint or is
// damaged (checkpoint.ErrNotCheckpoint).
var ErrNotCheckpoint = checkpoint.ErrNotCheckpoint

// ReadFile reads the checkpoint file path; with until not empty it stops
// after the section of that name ("header": the header), unverified. The
// file is untrusted (checkpoint.Read says what is checked); the header
// must decode and pass its checks (no kind but KindTrain, KindModel and
// KindAugmented, no negative count or dimension, at most 64 modes and
// 1024 settings, a 64-hex-digit fingerprint) before anything after it is
// read. Errors name the file, and wrap ErrNotCheckpoint; a missing file is
// an os.ErrNotExist error.
func ReadFile(path string, until string) (*File, error) {
	out := &File{}
	f, err := checkpoint.ReadFile(path, until, out.readHeader)
	return out.with(f, err)
}

// Read is ReadFile of the size bytes of f, named path in errors.
func Read(f io.Reader, size uint64, path string, until string) (*File, error) {
	out := &File{}
	file, err := checkpoint.Read(f, size, path, until, out.readHeader)
	return out.with(file, err)
}

// with returns f, holding file, or err.
func (f *File) with(file *checkpoint.File, err error) (*File, error) {
	if err != nil {
		return nil, err
	}
	f.File = file
	return f, nil
}

// readHeader decodes and checks the header section b.
func (f *File) readHeader(b []byte) error {
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&f.Header); err != nil {
		return err
	}
	return f.Header.check()
}

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
	case h.Kind != KindTrain && h.Kind != KindModel && h.Kind != KindAugmented:
		return fmt.Errorf("kind %q: want %s, %s or %s", h.Kind, KindTrain, KindModel, KindAugmented)
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
