package dain

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"strings"
)

// A checkpoint file is a small binary container of named sections, little
// endian, standard library only:
//
//	magic    8 bytes  "DAINXCKP"
//	format   uint32   ckFormat (1)
//	sections, each:
//	  name   uint8 length, then that many bytes (ASCII)
//	  kind   uint8    1 gob-encoded value, 2 float32s, 3 int32s, 4 float64s
//	  count  uint64   bytes (kind 1) or elements (kinds 2–4)
//	  data   count bytes, or count elements of 4 or 8 bytes
//	end      a section named "end" of kind 0 whose count is 32, then the
//	         SHA-256 of every byte before that section
//
// The first section is "header", a gob-encoded ckHeader naming the dainx
// version, the configuration, the input and what the file holds. Bulk
// arrays are written and read in chunks, so saving a model costs no copy
// of it in memory. Files are written to a temporary name in the checkpoint
// directory, synced and renamed (tensor.AtomicWrite), so a file is either
// whole or absent; the checksum also catches a file damaged later.

const (
	ckMagic  = "DAINXCKP"
	ckFormat = 1

	ckGob     = 1
	ckFloat32 = 2
	ckInt32   = 3
	ckFloat64 = 4
)

// ckWriter writes the sections of one checkpoint file.
type ckWriter struct {
	w   *bufio.Writer
	h   hash.Hash
	buf []byte
	err error
}

func newCkWriter(w io.Writer) *ckWriter {
	h := sha256.New()
	c := &ckWriter{w: bufio.NewWriterSize(io.MultiWriter(w, h), 1<<20), h: h, buf: make([]byte, 1<<16)}
	c.raw([]byte(ckMagic))
	c.raw(binary.LittleEndian.AppendUint32(nil, ckFormat))
	return c
}

func (c *ckWriter) raw(b []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}

func (c *ckWriter) section(name string, kind byte, count int) {
	if len(name) == 0 || len(name) > 255 {
		panic("dain: checkpoint section name " + name)
	}
	b := append([]byte{byte(len(name))}, name...)
	b = append(b, kind)
	c.raw(binary.LittleEndian.AppendUint64(b, uint64(count)))
}

// gob writes v gob-encoded.
func (c *ckWriter) gob(name string, v any) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil && c.err == nil {
		c.err = fmt.Errorf("encoding %s: %w", name, err)
	}
	c.section(name, ckGob, b.Len())
	c.raw(b.Bytes())
}

func (c *ckWriter) f32(name string, v []float32) {
	c.section(name, ckFloat32, len(v))
	for lo := 0; lo < len(v); lo += len(c.buf) / 4 {
		hi := min(lo+len(c.buf)/4, len(v))
		b := c.buf[:0]
		for _, x := range v[lo:hi] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		c.raw(b)
	}
}

func (c *ckWriter) i32(name string, v []int32) {
	c.section(name, ckInt32, len(v))
	for lo := 0; lo < len(v); lo += len(c.buf) / 4 {
		hi := min(lo+len(c.buf)/4, len(v))
		b := c.buf[:0]
		for _, x := range v[lo:hi] {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
		c.raw(b)
	}
}

func (c *ckWriter) f64(name string, v []float64) {
	c.section(name, ckFloat64, len(v))
	for lo := 0; lo < len(v); lo += len(c.buf) / 8 {
		hi := min(lo+len(c.buf)/8, len(v))
		b := c.buf[:0]
		for _, x := range v[lo:hi] {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		c.raw(b)
	}
}

// close writes the end section and the checksum.
func (c *ckWriter) close() error {
	c.section("end", 0, sha256.Size)
	if c.err == nil {
		c.err = c.w.Flush()
	}
	if c.err != nil {
		return c.err
	}
	_, err := c.w.Write(c.h.Sum(nil))
	if err == nil {
		err = c.w.Flush()
	}
	return err
}

// ckFile is a checkpoint file read into memory: its header and sections.
type ckFile struct {
	header ckHeader
	gobs   map[string][]byte
	f32s   map[string][]float32
	i32s   map[string][]int32
	f64s   map[string][]float64
}

// errNotCheckpoint marks a file that is not a dainx checkpoint or is
// damaged.
var errNotCheckpoint = errors.New("not a whole dainx checkpoint file")

// maxCkGob is the largest gob-encoded section a checkpoint file may hold,
// in bytes: the records are small (a header, a training record with one
// line per epoch); the bulk arrays are sections of their own.
const maxCkGob = 64 << 20

// hashReader hashes every byte read through it.
type hashReader struct {
	r io.Reader
	h hash.Hash
}

func (r *hashReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.h.Write(p[:n])
	return n, err
}

// readCkFile reads the checkpoint file path; with until not empty it stops
// after the section of that name ("header": the header), unverified. The
// file is untrusted: every section's size is checked against the bytes
// left in the file (and a gob section against maxCkGob) before anything is
// allocated for it, a name must be printable ASCII and appear once, and
// the checksum must match. Errors name the file, and errNotCheckpoint
// (wrapped) the section and what is wrong.
func readCkFile(path string, until string) (*ckFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readCk(f, uint64(st.Size()), path, until)
}

// readCk is readCkFile of the size bytes of f, named path in errors.
func readCk(f io.Reader, size uint64, path string, until string) (*ckFile, error) {
	br := bufio.NewReaderSize(f, 1<<20)
	hr := &hashReader{r: br, h: sha256.New()}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", path, errNotCheckpoint, fmt.Sprintf(format, args...))
	}
	var head [12]byte
	if _, err := io.ReadFull(hr, head[:]); err != nil || string(head[:8]) != ckMagic {
		return nil, bad("no %q magic number at its start", ckMagic)
	}
	if v := binary.LittleEndian.Uint32(head[8:]); v != ckFormat {
		if v > ckFormat {
			return nil, fmt.Errorf("%s: checkpoint format %d, written by a newer dainx; this one reads format %d", path, v, ckFormat)
		}
		return nil, bad("unknown format %d", v)
	}
	out := &ckFile{gobs: map[string][]byte{}, f32s: map[string][]float32{}, i32s: map[string][]int32{}, f64s: map[string][]float64{}}
	buf := make([]byte, 1<<16)
	off := uint64(len(head)) // bytes read so far
	seen := map[string]bool{}
	for first := true; ; first = false {
		var n [1]byte
		if _, err := io.ReadFull(hr, n[:]); err != nil {
			return nil, bad("truncated at byte %d: no section after %d sections", off, len(seen))
		}
		meta := make([]byte, int(n[0])+9)
		if _, err := io.ReadFull(hr, meta); err != nil {
			return nil, bad("truncated at byte %d, in a section's name", off)
		}
		off += 1 + uint64(len(meta))
		name, kind, count := string(meta[:n[0]]), meta[n[0]], binary.LittleEndian.Uint64(meta[n[0]+1:])
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			return nil, bad("a section name %q at byte %d: want printable ASCII", name, off)
		}
		if seen[name] {
			return nil, bad("section %q appears twice", name)
		}
		seen[name] = true
		if first != (name == "header") || first && kind != ckGob {
			return nil, bad("its first section is %q of kind %d, not the header", name, kind)
		}
		width := map[byte]uint64{0: 1, ckGob: 1, ckFloat32: 4, ckInt32: 4, ckFloat64: 8}[kind]
		if width == 0 {
			return nil, bad("section %q of unknown kind %d", name, kind)
		}
		// Every count is checked against the bytes left before anything
		// is allocated for it.
		left := size - min(off, size)
		if count > left/width {
			return nil, bad("section %q claims %d elements of %d bytes at byte %d, but the file's %d bytes leave %d", name, count, width, off, size, left)
		}
		if kind == ckGob && count > maxCkGob {
			return nil, bad("section %q: %d bytes of encoded record, over the limit of %d", name, count, maxCkGob)
		}
		off += count * width
		if name == "end" {
			sum := hr.h.Sum(nil)
			var got [sha256.Size]byte
			if kind != 0 || count != sha256.Size {
				return nil, bad("end section of kind %d and %d bytes, want kind 0 and %d", kind, count, sha256.Size)
			}
			if _, err := io.ReadFull(br, got[:]); err != nil {
				return nil, bad("truncated checksum")
			}
			if !bytes.Equal(sum, got[:]) {
				return nil, bad("checksum mismatch: the file is damaged")
			}
			if _, err := br.ReadByte(); err != io.EOF {
				return nil, bad("bytes after its checksum")
			}
			return out, nil
		}
		if kind == 0 {
			return nil, bad("section %q of kind 0 (only the end section has it)", name)
		}
		switch kind {
		case ckGob:
			b := make([]byte, count)
			if _, err := io.ReadFull(hr, b); err != nil {
				return nil, bad("truncated in section %q", name)
			}
			if first {
				if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&out.header); err != nil {
					return nil, bad("header: %v", err)
				}
				if err := out.header.check(); err != nil {
					return nil, bad("header: %v", err)
				}
			}
			out.gobs[name] = b
		case ckFloat32, ckInt32, ckFloat64:
			var f32 []float32
			var i32 []int32
			var f64 []float64
			switch kind {
			case ckFloat32:
				f32 = make([]float32, count)
			case ckInt32:
				i32 = make([]int32, count)
			default:
				f64 = make([]float64, count)
			}
			per := len(buf) / int(width)
			for lo := 0; lo < int(count); lo += per {
				hi := min(lo+per, int(count))
				b := buf[:(hi-lo)*int(width)]
				if _, err := io.ReadFull(hr, b); err != nil {
					return nil, bad("truncated in section %q", name)
				}
				for i := lo; i < hi; i++ {
					j := (i - lo) * int(width)
					switch kind {
					case ckFloat32:
						f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[j:]))
					case ckInt32:
						i32[i] = int32(binary.LittleEndian.Uint32(b[j:]))
					default:
						f64[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[j:]))
					}
				}
			}
			switch kind {
			case ckFloat32:
				out.f32s[name] = f32
			case ckInt32:
				out.i32s[name] = i32
			default:
				out.f64s[name] = f64
			}
		}
		if name == until {
			return out, nil
		}
	}
}

// decode gob-decodes section name into v.
func (f *ckFile) decode(name string, v any) error {
	b, ok := f.gobs[name]
	if !ok {
		return fmt.Errorf("%w: no %q section", errNotCheckpoint, name)
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("%w: section %q: %v", errNotCheckpoint, name, err)
	}
	return nil
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
