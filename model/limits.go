package model

// Every saved model is read as untrusted input: model.json's sizes and
// counts are checked against hard limits and against each other, and the
// safetensors header against model.json and against the file's size,
// before anything is allocated from them (issue 31). A file that lies is
// an error naming the file and the field; nothing it says can make Load
// allocate more than the file's own size in parameters, overflow an
// integer, or panic.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/dainx/dainx/internal/infile"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// Limits on what a saved model may describe. Load refuses a model above
// any of them before allocating anything from it.
const (
	// MaxDim is the largest mode size (dims[n]), and the largest sum of
	// the mode sizes (the rows of the embedding table, addressed by
	// int32 offsets): tensor.MaxDim, 2³¹−1.
	MaxDim = tensor.MaxDim
	// MaxOrder is the largest order N (the number of modes).
	MaxOrder = 1024
	// MaxWidth is the largest embedding width, layer width, CoSTCo rank
	// and channel count.
	MaxWidth = 1 << 20
	// MaxLayers is the largest number of MLP layer widths.
	MaxLayers = 1024
	// MaxParams is the largest number of float32 parameters (2³⁶, 256
	// GiB); the safetensors file must hold 4 bytes for each in any case.
	MaxParams = 1 << 36
	// MaxCapacity is the largest batch a model is built for (Meta.Capacity
	// and Load's capacity), in cells: the cap of every -batch flag.
	MaxCapacity = 1 << 24
	// MaxActivations bounds capacity × the widest layer's values per cell
	// (the largest activation buffer Load's net allocates): 2³², 16 GiB
	// of float32.
	MaxActivations = 1 << 32
	// maxHeader is the largest safetensors JSON header Load reads (dainx
	// writes a few kilobytes).
	maxHeader = 16 << 20
	// maxEcho is the most characters of a string from a file that an
	// error message repeats.
	maxEcho = 80
)

// echo returns s quoted, cut to maxEcho characters (… marks a cut), for
// an error message that repeats a string read from a file.
func echo(s string) string {
	if utf8.RuneCountInString(s) <= maxEcho {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:maxEcho])) + "…"
}

// mulCap returns a·b, or false when a or b is negative or the product is
// above limit (or overflows).
func mulCap(a, b, limit int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > uint64(limit) {
		return 0, false
	}
	return int(lo), true
}

// bytesText is n bytes in words for an error message (2 MB, 16 GB).
func bytesText(n uint64) string {
	units := []string{"bytes", "kB", "MB", "GB", "TB", "PB", "EB"}
	f, u := float64(n), 0
	for f >= 1000 && u < len(units)-1 {
		f /= 1000
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.3g %s", f, units[u])
}

// checkLimits checks meta's sizes against the hard limits, naming the
// field: dims, order, widths, layers, rank, channels, capacity.
func checkLimits(m *Meta) error {
	if m.Order > MaxOrder {
		return fmt.Errorf("order = %d: above the limit %d", m.Order, MaxOrder)
	}
	if len(m.Dims) > MaxOrder {
		return fmt.Errorf("dims has %d entries: above the limit %d", len(m.Dims), MaxOrder)
	}
	rows := 0
	for n, d := range m.Dims {
		if d <= 0 {
			return fmt.Errorf("dims[%d] = %d: a mode size must be ≥ 1", n, d)
		}
		if d > MaxDim {
			return fmt.Errorf("dims[%d] = %d: above the limit %d", n, d, MaxDim)
		}
		if rows += d; rows > MaxDim {
			return fmt.Errorf("dims %s: %d rows over all modes, above the limit %d", short(m.Dims), rows, MaxDim)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"embedding_width", m.Width}, {"rank", m.Rank}, {"channels", m.Channels}} {
		if f.v > MaxWidth {
			return fmt.Errorf("%s = %d: above the limit %d", f.name, f.v, MaxWidth)
		}
	}
	if len(m.Layers) > MaxLayers {
		return fmt.Errorf("layers has %d widths: above the limit %d", len(m.Layers), MaxLayers)
	}
	for l, w := range m.Layers {
		if w > MaxWidth {
			return fmt.Errorf("layers[%d] = %d: above the limit %d", l, w, MaxWidth)
		}
	}
	if len(m.LayerShapes) > MaxLayers+1 {
		return fmt.Errorf("layer_shapes has %d entries: above the limit %d", len(m.LayerShapes), MaxLayers+1)
	}
	if m.Capacity < 0 || m.Capacity > MaxCapacity {
		return fmt.Errorf("capacity = %d: want 0…%d", m.Capacity, MaxCapacity)
	}
	return nil
}

// short formats a list of ints for a message, at most 8 of them.
func short(v []int) string {
	if len(v) <= 8 {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%v … (%d in all)", v[:8], len(v))
}

// paramCount returns the number of parameters of layout (overflow-safe),
// or an error when it is above MaxParams.
func paramCount(layout []nn.ParamTensor) (int, error) {
	total := 0
	for _, t := range layout {
		n := 1
		for _, d := range t.Shape {
			var ok bool
			if n, ok = mulCap(n, d, MaxParams); !ok {
				return 0, fmt.Errorf("tensor %s of shape %v: more than the limit of %d parameters", t.Name, t.Shape, MaxParams)
			}
		}
		if total += n; total > MaxParams {
			return 0, fmt.Errorf("%d parameters or more: above the limit %d", total, MaxParams)
		}
	}
	return total, nil
}

// CheckCapacity reports a batch capacity (cells) that Load cannot build a
// net of meta for: capacity above MaxCapacity, or capacity × the widest
// layer's values per cell above MaxActivations. what names the setting in
// the message (e.g. "-batch", or the metadata's "capacity").
func CheckCapacity(meta Meta, capacity int, what string) error {
	if capacity < 1 || capacity > MaxCapacity {
		return fmt.Errorf("%s %d: want 1…%d cells", what, capacity, MaxCapacity)
	}
	layers, _, err := expected(meta)
	if err != nil {
		return err
	}
	widest := meta.Order * meta.Width
	for _, l := range layers {
		widest = max(widest, l.Rows*l.Out, l.Rows*l.In)
	}
	if _, ok := mulCap(capacity, widest, MaxActivations); !ok {
		return fmt.Errorf("%s %d × %d values per cell in the widest layer: above the limit of %d activations; use a smaller batch", what, capacity, widest, MaxActivations)
	}
	return nil
}

// stEntry is one tensor of a safetensors header.
type stEntry struct {
	DType   string    `json:"dtype"`
	Shape   []uint64  `json:"shape"`
	Offsets [2]uint64 `json:"data_offsets"`
}

// readTensors reads the safetensors file sp and returns the tensors of
// want, in order, as one flat vector of total values (nn.Net's parameter
// layout). jp is the metadata file, named when the two disagree. It
// checks the file's size against total, then the header's length, JSON,
// tensor names, dtypes, shapes and offsets against want and the file,
// before allocating the vector; then reads each tensor's values, refusing
// a non-finite one.
func readTensors(jp, sp string, want []nn.ParamTensor, total int) ([]float32, error) {
	f, st, err := infile.OpenRegular(sp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("model %s: no such file (the tensors beside the .json)", sp)
	case errors.Is(err, infile.ErrNotRegular):
		return nil, fmt.Errorf("model %s: not a regular file", sp)
	case err != nil:
		return nil, fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	size := uint64(st.Size())
	need := 8 + 4*uint64(total) // total ≤ MaxParams: no overflow
	if size < need {
		return nil, fmt.Errorf("model %s: the metadata %s describes %d parameters, which need %s, but the file holds %s (truncated, or the two files are not one model's)", sp, jp, total, bytesText(need), bytesText(size))
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("model %s: "+format, append([]any{sp}, a...)...)
	}
	var head [8]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return nil, bad("reading the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(head[:])
	if n > size-8 {
		return nil, bad("not a complete safetensors file of %d bytes (truncated?): its header length %d runs past the end", size, n)
	}
	if n > maxHeader {
		return nil, bad("header length %d: above the limit %d", n, maxHeader)
	}
	hb := make([]byte, n) // n ≤ maxHeader and within the file
	if _, err := io.ReadFull(f, hb); err != nil {
		return nil, bad("reading the header: %v", err)
	}
	dataLen := size - 8 - n
	entries, err := parseHeader(hb)
	if err != nil {
		return nil, bad("not a complete safetensors file of %d bytes (truncated?): %v", size, err)
	}
	for _, e := range entries {
		if !slices.ContainsFunc(want, func(t nn.ParamTensor) bool { return t.Name == e.name }) {
			return nil, bad("unexpected tensor %s (the metadata describes %d tensors)", echo(e.name), len(want))
		}
	}
	byName := make(map[string]stEntry, len(entries))
	for _, e := range entries {
		byName[e.name] = e.stEntry
	}
	type span struct{ lo, hi uint64 }
	spans := make([]span, 0, len(want))
	for _, t := range want {
		e, ok := byName[t.Name]
		if !ok {
			return nil, bad("no tensor %s (want shape %v)", t.Name, t.Shape)
		}
		if e.DType != "F32" {
			return nil, bad("%s has dtype %s, want F32", t.Name, echo(e.DType))
		}
		if !slices.EqualFunc(e.Shape, t.Shape, func(a uint64, b int) bool { return a == uint64(b) }) {
			return nil, bad("%s has shape %v, want %v", t.Name, e.Shape, t.Shape)
		}
		lo, hi := e.Offsets[0], e.Offsets[1]
		nb := 4 * uint64(t.Len()) // the shape is want's: no overflow
		switch {
		case hi < lo:
			return nil, bad("tensor %q: data_offsets [%d, %d] end before they begin", t.Name, lo, hi)
		case hi-lo != nb:
			return nil, bad("tensor %q: data_offsets [%d, %d] span %s, its shape %v needs %s", t.Name, lo, hi, bytesText(hi-lo), t.Shape, bytesText(nb))
		case hi > dataLen:
			return nil, bad("tensor %q needs %s at bytes %d…%d of the data but the file holds %s of data (truncated?)", t.Name, bytesText(nb), lo, hi, bytesText(dataLen))
		}
		spans = append(spans, span{lo, hi})
	}
	// The tensors tile the data exactly: no overlap, no gap, nothing after.
	slices.SortFunc(spans, func(a, b span) int {
		if a.lo < b.lo {
			return -1
		}
		if a.lo > b.lo {
			return 1
		}
		return 0
	})
	at := uint64(0)
	for _, s := range spans {
		if s.lo != at {
			return nil, bad("data_offsets overlap or leave a gap at byte %d of the data", at)
		}
		at = s.hi
	}
	if at != dataLen {
		return nil, bad("%s of data after the tensors' end at %d (the file is %d bytes)", bytesText(dataLen-at), at, size)
	}
	// Every size is now known to match the file: read the values.
	out := make([]float32, total)
	buf := make([]byte, 1<<16)
	base := int64(8 + n)
	off := 0
	for _, t := range want {
		e := byName[t.Name]
		k := t.Len()
		dst := out[off : off+k]
		pos := base + int64(e.Offsets[0])
		for i := 0; i < k; {
			c := min(k-i, len(buf)/4)
			b := buf[:4*c]
			if _, err := f.ReadAt(b, pos+int64(4*i)); err != nil {
				return nil, bad("reading %s: %v (truncated?)", t.Name, err)
			}
			for j := range c {
				x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
				if !finite(x) {
					return nil, bad("%s holds a non-finite value (%v at element %d)", t.Name, x, i+j)
				}
				dst[i+j] = x
			}
			i += c
		}
		off += k
	}
	return out, nil
}

// namedEntry is a header tensor with its name.
type namedEntry struct {
	name string
	stEntry
}

// parseHeader parses a safetensors JSON header: an object of tensor name
// → {dtype, shape, data_offsets}, with an optional "__metadata__" object
// of strings. Errors say which entry is malformed.
func parseHeader(hb []byte) ([]namedEntry, error) {
	hb = bytes.TrimRight(hb, " ")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hb, &raw); err != nil {
		return nil, fmt.Errorf("header is not a JSON object: %v", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("header is not a JSON object: null")
	}
	out := make([]namedEntry, 0, len(raw))
	for name, v := range raw {
		if name == "__metadata__" {
			var meta map[string]string
			if err := json.Unmarshal(v, &meta); err != nil {
				return nil, fmt.Errorf("__metadata__: want an object of strings: %v", err)
			}
			continue
		}
		var e stEntry
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("tensor %s: want {dtype, shape, data_offsets}: %v", echo(name), err)
		}
		if len(e.Shape) > 8 {
			return nil, fmt.Errorf("tensor %s: shape of %d dimensions", echo(name), len(e.Shape))
		}
		out = append(out, namedEntry{name, e})
	}
	slices.SortFunc(out, func(a, b namedEntry) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return out, nil
}

// maxMetaSize is the largest metadata file (NAME.json) ReadMeta reads;
// dainx writes about a kilobyte.
const maxMetaSize = 16 << 20

// readSmall reads the regular file path, refusing one over limit bytes
// (or anything but a regular file) without reading it.
func readSmall(path string, limit int64) ([]byte, error) {
	f, st, err := infile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: above the limit of %s for a metadata file", bytesText(uint64(st.Size())), bytesText(uint64(limit)))
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("grew past the limit of %s while read", bytesText(uint64(limit)))
	}
	return b, nil
}

// cut returns s cut to n bytes at a rune boundary, … marking a cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
