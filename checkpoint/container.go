// Package checkpoint is the on-disk container of dainx's checkpoint files
// (dainx augment -checkpoint DIR): a small binary file of named sections,
// little endian, no third-party module:
//
//	magic    8 bytes  "DAINXCKP"
//	format   uint32   Format (1)
//	sections, each:
//	  name   uint8 length, then that many bytes (printable ASCII)
//	  kind   uint8    1 gob-encoded value, 2 float32s, 3 int32s, 4 float64s
//	  count  uint64   bytes (kind 1) or elements (kinds 2–4)
//	  data   count bytes, or count elements of 4 or 8 bytes
//	end      a section named "end" of kind 0 whose count is 32, then the
//	         SHA-256 of every byte before that section
//
// The first section is "header", a gob-encoded record that the writer
// defines (package dain: the dainx version, the configuration, the input
// and what the file holds) and that the reader checks through a callback
// before it reads further. Bulk arrays are written and read in chunks, so
// saving a model costs no copy of it in memory. What the sections mean,
// where files go and how they are committed (written to a temporary name,
// synced and renamed) is the caller's; the checksum catches a file damaged
// later.
package checkpoint

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
	"strings"

	"github.com/dainx/dainx/internal/infile"
)

const (
	// Magic opens every checkpoint file.
	Magic = "DAINXCKP"
	// Format is the container format this package writes and reads.
	Format = 1

	kindGob     = 1
	kindFloat32 = 2
	kindInt32   = 3
	kindFloat64 = 4
)

// Writer writes the sections of one checkpoint file. Errors are sticky:
// the first one is returned by Close and nothing is written after it.
type Writer struct {
	w   *bufio.Writer
	h   hash.Hash
	buf []byte
	err error
}

// NewWriter starts a checkpoint file on w: it writes the magic number and
// the format. The caller's first section must be "header" (Gob).
func NewWriter(w io.Writer) *Writer {
	h := sha256.New()
	c := &Writer{w: bufio.NewWriterSize(io.MultiWriter(w, h), 1<<20), h: h, buf: make([]byte, 1<<16)}
	c.raw([]byte(Magic))
	c.raw(binary.LittleEndian.AppendUint32(nil, Format))
	return c
}

func (c *Writer) raw(b []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}

// section writes a section's name, kind and count. It panics on a name
// that is empty or longer than 255 bytes (a programming error).
func (c *Writer) section(name string, kind byte, count int) {
	if len(name) == 0 || len(name) > 255 {
		panic("checkpoint: section name " + name)
	}
	b := append([]byte{byte(len(name))}, name...)
	b = append(b, kind)
	c.raw(binary.LittleEndian.AppendUint64(b, uint64(count)))
}

// Gob writes v gob-encoded as section name.
func (c *Writer) Gob(name string, v any) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil && c.err == nil {
		c.err = fmt.Errorf("encoding %s: %w", name, err)
	}
	c.section(name, kindGob, b.Len())
	c.raw(b.Bytes())
}

// F32 writes v as section name, in chunks of 64 KiB.
func (c *Writer) F32(name string, v []float32) {
	c.section(name, kindFloat32, len(v))
	chunks(c, v, 4, func(b []byte, x float32) []byte { return binary.LittleEndian.AppendUint32(b, math.Float32bits(x)) })
}

// I32 writes v as section name, in chunks of 64 KiB.
func (c *Writer) I32(name string, v []int32) {
	c.section(name, kindInt32, len(v))
	chunks(c, v, 4, func(b []byte, x int32) []byte { return binary.LittleEndian.AppendUint32(b, uint32(x)) })
}

// F64 writes v as section name, in chunks of 64 KiB.
func (c *Writer) F64(name string, v []float64) {
	c.section(name, kindFloat64, len(v))
	chunks(c, v, 8, func(b []byte, x float64) []byte { return binary.LittleEndian.AppendUint64(b, math.Float64bits(x)) })
}

// chunks writes the elements of v, width bytes each as put encodes them,
// through the writer's buffer.
func chunks[T any](c *Writer, v []T, width int, put func([]byte, T) []byte) {
	per := len(c.buf) / width
	for lo := 0; lo < len(v); lo += per {
		hi := min(lo+per, len(v))
		b := c.buf[:0]
		for _, x := range v[lo:hi] {
			b = put(b, x)
		}
		c.raw(b)
	}
}

// Close writes the end section and the checksum, and flushes. It returns
// the first error of any write. It does not close the underlying writer.
func (c *Writer) Close() error {
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

// File is a checkpoint file read into memory: its sections by name and
// kind (a name appears in one map only).
type File struct {
	Gob map[string][]byte
	F32 map[string][]float32
	I32 map[string][]int32
	F64 map[string][]float64
}

// ErrNotCheckpoint marks a file that is not a whole dainx checkpoint file
// (or whose contents do not make sense to the caller).
var ErrNotCheckpoint = errors.New("not a whole dainx checkpoint file")

// MaxGob is the largest gob-encoded section a checkpoint file may hold, in
// bytes: the records are small (a header, a training record with one line
// per epoch); the bulk arrays are sections of their own.
const MaxGob = 64 << 20

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

// ReadFile reads the checkpoint file path (Read of the whole file).
func ReadFile(path, until string, header func([]byte) error) (*File, error) {
	f, st, err := infile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, uint64(st.Size()), path, until, header)
}

// Read reads a checkpoint file of size bytes from f, named path in errors.
// With until not empty it stops after the section of that name ("header":
// the header alone), unverified by the checksum. header, if not nil, is
// given the header section's bytes as soon as they are read, and its error
// refuses the file. The file is untrusted: every section's size is checked
// against the bytes left in the file (and a gob section against MaxGob)
// before anything is allocated for it, a name must be printable ASCII and
// appear once, the first section must be the header and the checksum must
// match. Errors name path, and wrap ErrNotCheckpoint with the section and
// what is wrong; a file of a newer format says so.
func Read(f io.Reader, size uint64, path, until string, header func([]byte) error) (*File, error) {
	br := bufio.NewReaderSize(f, 1<<20)
	hr := &hashReader{r: br, h: sha256.New()}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", path, ErrNotCheckpoint, fmt.Sprintf(format, args...))
	}
	var head [12]byte
	if _, err := io.ReadFull(hr, head[:]); err != nil || string(head[:8]) != Magic {
		return nil, bad("no %q magic number at its start", Magic)
	}
	if v := binary.LittleEndian.Uint32(head[8:]); v != Format {
		if v > Format {
			return nil, fmt.Errorf("%s: checkpoint format %d, written by a newer dainx; this one reads format %d", path, v, Format)
		}
		return nil, bad("unknown format %d", v)
	}
	out := &File{Gob: map[string][]byte{}, F32: map[string][]float32{}, I32: map[string][]int32{}, F64: map[string][]float64{}}
	r := reader{hr: hr, br: br, size: size, off: uint64(len(head)), buf: make([]byte, 1<<16), bad: bad}
	seen := map[string]bool{}
	for first := true; ; first = false {
		name, kind, count, err := r.meta(first, seen)
		if err != nil {
			return nil, err
		}
		if name == "end" {
			return out, r.end(kind, count)
		}
		if err := r.body(out, name, kind, count); err != nil {
			return nil, err
		}
		if first && header != nil {
			if err := header(out.Gob[name]); err != nil {
				return nil, bad("header: %v", err)
			}
		}
		if name == until {
			return out, nil
		}
	}
}

// reader is the state of one Read.
type reader struct {
	hr   *hashReader
	br   *bufio.Reader
	size uint64 // the file's bytes
	off  uint64 // bytes read so far
	buf  []byte
	bad  func(format string, args ...any) error
}

// widths are the bytes of one element of each section kind.
var widths = map[byte]uint64{0: 1, kindGob: 1, kindFloat32: 4, kindInt32: 4, kindFloat64: 8}

// meta reads a section's name, kind and count and checks them against the
// names seen so far and the bytes left in the file.
func (r *reader) meta(first bool, seen map[string]bool) (string, byte, uint64, error) {
	bad := r.bad
	var n [1]byte
	if _, err := io.ReadFull(r.hr, n[:]); err != nil {
		return "", 0, 0, bad("truncated at byte %d: no section after %d sections", r.off, len(seen))
	}
	meta := make([]byte, int(n[0])+9)
	if _, err := io.ReadFull(r.hr, meta); err != nil {
		return "", 0, 0, bad("truncated at byte %d, in a section's name", r.off)
	}
	r.off += 1 + uint64(len(meta))
	name, kind, count := string(meta[:n[0]]), meta[n[0]], binary.LittleEndian.Uint64(meta[n[0]+1:])
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return "", 0, 0, bad("a section name %q at byte %d: want printable ASCII", name, r.off)
	}
	if seen[name] {
		return "", 0, 0, bad("section %q appears twice", name)
	}
	seen[name] = true
	if first != (name == "header") || first && kind != kindGob {
		return "", 0, 0, bad("its first section is %q of kind %d, not the header", name, kind)
	}
	width := widths[kind]
	if width == 0 {
		return "", 0, 0, bad("section %q of unknown kind %d", name, kind)
	}
	// Every count is checked against the bytes left before anything is
	// allocated for it.
	left := r.size - min(r.off, r.size)
	if count > left/width {
		return "", 0, 0, bad("section %q claims %d elements of %d bytes at byte %d, but the file's %d bytes leave %d", name, count, width, r.off, r.size, left)
	}
	if kind == kindGob && count > MaxGob {
		return "", 0, 0, bad("section %q: %d bytes of encoded record, over the limit of %d", name, count, MaxGob)
	}
	if name != "end" && kind == 0 {
		return "", 0, 0, bad("section %q of kind 0 (only the end section has it)", name)
	}
	r.off += count * width
	return name, kind, count, nil
}

// end checks the end section and the checksum, and that nothing follows.
func (r *reader) end(kind byte, count uint64) error {
	sum := r.hr.h.Sum(nil)
	var got [sha256.Size]byte
	if kind != 0 || count != sha256.Size {
		return r.bad("end section of kind %d and %d bytes, want kind 0 and %d", kind, count, sha256.Size)
	}
	if _, err := io.ReadFull(r.br, got[:]); err != nil {
		return r.bad("truncated checksum")
	}
	if !bytes.Equal(sum, got[:]) {
		return r.bad("checksum mismatch: the file is damaged")
	}
	if _, err := r.br.ReadByte(); err != io.EOF {
		return r.bad("bytes after its checksum")
	}
	return nil
}

// body reads a section's data into out.
func (r *reader) body(out *File, name string, kind byte, count uint64) error {
	if kind == kindGob {
		b := make([]byte, count)
		if _, err := io.ReadFull(r.hr, b); err != nil {
			return r.bad("truncated in section %q", name)
		}
		out.Gob[name] = b
		return nil
	}
	width := int(widths[kind])
	var f32 []float32
	var i32 []int32
	var f64 []float64
	switch kind {
	case kindFloat32:
		f32 = make([]float32, count)
		out.F32[name] = f32
	case kindInt32:
		i32 = make([]int32, count)
		out.I32[name] = i32
	default:
		f64 = make([]float64, count)
		out.F64[name] = f64
	}
	per := len(r.buf) / width
	for lo := 0; lo < int(count); lo += per {
		hi := min(lo+per, int(count))
		b := r.buf[:(hi-lo)*width]
		if _, err := io.ReadFull(r.hr, b); err != nil {
			return r.bad("truncated in section %q", name)
		}
		for i := lo; i < hi; i++ {
			j := (i - lo) * width
			switch kind {
			case kindFloat32:
				f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[j:]))
			case kindInt32:
				i32[i] = int32(binary.LittleEndian.Uint32(b[j:]))
			default:
				f64[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[j:]))
			}
		}
	}
	return nil
}

// Decode gob-decodes section name into v. Errors wrap ErrNotCheckpoint.
func (f *File) Decode(name string, v any) error {
	b, ok := f.Gob[name]
	if !ok {
		return fmt.Errorf("%w: no %q section", ErrNotCheckpoint, name)
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
		return fmt.Errorf("%w: section %q: %v", ErrNotCheckpoint, name, err)
	}
	return nil
}
