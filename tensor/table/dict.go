package table

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/dainx/dainx/internal/infile"
	"github.com/dainx/dainx/tensor"
)

// Kinds of a mode's IDs (Dict.Kind).
const (
	KindInt    = "int"    // every ID an integer (written as integers: Parquet INT64)
	KindString = "string" // text IDs
	KindMixed  = "mixed"  // IDs of several types (the Python estimator's): written as text
	KindTime   = "time"   // time bins
)

// DictFile is the dictionaries' file name in a model directory.
const DictFile = "dictionaries.json"

// DictFormat and DictVersion name the dictionaries' file format.
const (
	DictFormat  = "dainx-dictionaries"
	DictVersion = 1
)

// Limits on what a dictionaries file may hold (it is read as untrusted
// input): MaxID bytes per ID and per column name, MaxDictFile bytes in
// all.
const (
	MaxID       = 1 << 16
	MaxDictFile = 1 << 30
)

// Dict is the dictionary of one mode: index → the user's ID, or, for a
// time mode, index → the bin First + index.
type Dict struct {
	Column string
	Kind   string   // KindInt, KindString, KindMixed or KindTime
	IDs    []string // the ID of each index as text (not for time modes)
	Bin    Bin      // time modes: the bin width
	First  int64    // time modes: the bin of index 0 (Bin.Of's number)
	Size   int      // the number of indices (the mode's size)

	index map[string]int32 // ID → index, built by Lookup
}

// Label returns index i's ID as outputs write it: the ID, or for a time
// mode the start of its bin as RFC 3339 text (UTC).
func (d *Dict) Label(i int32) string {
	if d.Kind == KindTime {
		return d.Bin.Label(d.First + int64(i))
	}
	return d.IDs[i]
}

// Origin returns the start of a time mode's first bin (RFC 3339, UTC).
func (d *Dict) Origin() string { return d.Bin.Label(d.First) }

// Lookup returns the index of the ID id (its text) in a mode of IDs.
func (d *Dict) Lookup(id string) (int32, bool) {
	if d.index == nil {
		d.index = make(map[string]int32, len(d.IDs))
		for i, s := range d.IDs {
			d.index[s] = int32(i)
		}
	}
	i, ok := d.index[id]
	return i, ok
}

// Dicts are the dictionaries of a table read as a tensor: one per mode,
// the value column's name and how the indices were numbered. They are
// what turns a run's indices back into the user's IDs.
type Dicts struct {
	Table  Format // the format the table was read from (0 when not known)
	Value  string // the value column ("" when none)
	Sorted bool   // -ids sorted (else order of first appearance)
	Modes  []*Dict
}

// Dims returns every mode's size.
func (d *Dicts) Dims() []int {
	out := make([]int, len(d.Modes))
	for i, m := range d.Modes {
		out[i] = m.Size
	}
	return out
}

// Spec returns the modes (columns and bins) and value of d.
func (d *Dicts) Spec() Spec {
	s := Spec{Value: d.Value, Sorted: d.Sorted}
	for _, m := range d.Modes {
		s.Modes = append(s.Modes, Mode{Column: m.Column, Bin: m.Bin})
	}
	return s
}

// Summary says in one line what the dictionaries hold, for progress:
// "userId 610 IDs, movieId 9724 IDs, timestamp 8215 days from 1996-03-29T00:00:00Z".
func (d *Dicts) Summary() string {
	var b bytes.Buffer
	for i, m := range d.Modes {
		if i > 0 {
			b.WriteString(", ")
		}
		if m.Kind == KindTime {
			unit := m.Bin.Unit + "s"
			if m.Bin.Unit == "" {
				unit = "bins of " + m.Bin.String() + " s"
			}
			fmt.Fprintf(&b, "%s %d %s from %s", m.Column, m.Size, unit, m.Origin())
		} else {
			fmt.Fprintf(&b, "%s %d IDs", m.Column, m.Size)
		}
	}
	return b.String()
}

// WriteJSON writes d as a dictionaries file (docs/usage.md, "Your own
// data"): {"format": "dainx-dictionaries", "version": 1, "table", "value",
// "ids", "modes": [{"column", "kind", "size", "ids": […]} or, for a time
// mode, {"column", "kind": "time", "size", "bin", "bin_seconds",
// "first_bin", "origin"}]}. Integer IDs are JSON numbers, others strings.
func (d *Dicts) WriteJSON(w io.Writer) error {
	b := bufio.NewWriterSize(w, 1<<16)
	ids := "first"
	if d.Sorted {
		ids = "sorted"
	}
	table := ""
	if d.Table != 0 {
		table = d.Table.String()
	}
	fmt.Fprintf(b, "{\n  \"format\": %q,\n  \"version\": %d,\n  \"table\": %s,\n  \"value\": %s,\n  \"ids\": %q,\n  \"modes\": [", DictFormat, DictVersion, jsonString(table), jsonString(d.Value), ids)
	for n, m := range d.Modes {
		if n > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, "\n    {\"column\": %s, \"kind\": %q, \"size\": %d", jsonString(m.Column), m.Kind, m.Size)
		if m.Kind == KindTime {
			fmt.Fprintf(b, ", \"bin\": %q, \"bin_seconds\": %d, \"first_bin\": %d, \"origin\": %q}", m.Bin.String(), m.Bin.Seconds, m.First, m.Origin())
			continue
		}
		b.WriteString(", \"ids\": [")
		for i, id := range m.IDs {
			if i > 0 {
				b.WriteByte(',')
			}
			if m.Kind == KindInt {
				b.WriteString(id)
			} else {
				b.WriteString(jsonString(id))
			}
		}
		b.WriteString("]}")
	}
	b.WriteString("\n  ]\n}\n")
	return b.Flush()
}

func jsonString(s string) string {
	js, _ := json.Marshal(s) // invalid UTF-8 becomes U+FFFD; IDs read from text are checked UTF-8
	return string(js)
}

// dictJSON is the dictionaries file as read.
type dictJSON struct {
	Format  string
	Version int
	Table   string
	Value   string
	IDs     string
	Modes   []*modeJSON
}

type modeJSON struct {
	Column     string
	Kind       string
	Size       int64
	HasIDs     bool     // "ids" given (not null)
	IDs        []string // as text: strings, numbers, booleans
	index      map[string]int32
	notInt     int // the first of IDs not a canonical integer number (-1: none)
	Bin        string
	BinSeconds int64
	FirstBin   *int64
	Origin     string
}

// ReadJSON reads the dictionaries file path as untrusted input: a file
// over MaxDictFile bytes is refused before it is read, and every field is
// checked (the format and version, one mode per entry of dims when dims
// is not nil, each mode's size against dims and against its IDs, IDs
// unique, scalars, at most MaxID bytes, integers where the kind says so,
// a time mode's bin and first bin in range and its origin that bin's
// start). Errors name the file and the field.
//
// The file is read as a stream of JSON tokens, never decoded whole: a
// mode's IDs are counted as they come and refused as soon as they
// outnumber the model's mode (dims) or tensor.MaxDim, so what it holds
// is at most the model's IDs, however large the file.
func ReadJSON(path string, dims []int) (*Dicts, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("dictionaries %s: "+format, append([]any{path}, a...)...)
	}
	f, st, err := infile.OpenRegular(path)
	if errors.Is(err, infile.ErrNotRegular) {
		return nil, bad("%v", err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > MaxDictFile {
		return nil, bad("%d bytes: above the limit of %d", st.Size(), MaxDictFile)
	}
	return readDicts(bufio.NewReaderSize(io.LimitReader(f, MaxDictFile+1), 1<<16), dims, bad)
}

// dictError is an error of the file's content (bad words it).
type dictError struct{ msg string }

func (e *dictError) Error() string { return e.msg }

// readDicts reads a dictionaries file from r (ReadJSON); bad makes its
// errors.
func readDicts(r io.Reader, dims []int, bad func(string, ...any) error) (*Dicts, error) {
	dr := &dictReader{dec: json.NewDecoder(r), dims: dims}
	dr.dec.UseNumber()
	js, err := dr.read()
	if err != nil {
		var de *dictError
		if errors.As(err, &de) {
			return nil, bad("%s", de.msg)
		}
		return nil, bad("not a dictionaries file: %v", err)
	}
	if js.Format != DictFormat {
		return nil, bad("format %s, want %q", tensor.Echo(js.Format), DictFormat)
	}
	if js.Version != DictVersion {
		return nil, bad("version %d; this dainx reads version %d", js.Version, DictVersion)
	}
	if len(js.Modes) == 0 || len(js.Modes) > MaxOrder {
		return nil, bad("%d modes: want 1…%d", len(js.Modes), MaxOrder)
	}
	if dims != nil && len(js.Modes) != len(dims) {
		return nil, bad("%d modes, the model's order is %d", len(js.Modes), len(dims))
	}
	d := &Dicts{Value: js.Value}
	if len(js.Value) > MaxID || !utf8.ValidString(js.Value) {
		return nil, bad("value: not a column name (UTF-8, at most %d bytes)", MaxID)
	}
	if f, err := ParseFormat(js.Table); err == nil {
		d.Table = f
	}
	switch js.IDs {
	case "first", "":
	case "sorted":
		d.Sorted = true
	default:
		return nil, bad("ids %s: want \"first\" or \"sorted\"", tensor.Echo(js.IDs))
	}
	cols := map[string]bool{}
	total := int64(0)
	for n, m := range js.Modes {
		where := fmt.Sprintf("modes[%d]", n)
		if m.Column == "" || len(m.Column) > MaxID || !utf8.ValidString(m.Column) {
			return nil, bad("%s.column: want a column name (UTF-8, 1…%d bytes)", where, MaxID)
		}
		if cols[m.Column] || m.Column == js.Value {
			return nil, bad("%s.column %s: named twice", where, tensor.Echo(m.Column))
		}
		cols[m.Column] = true
		if m.Size < 1 || m.Size > tensor.MaxDim {
			return nil, bad("%s.size %d: want 1…%d", where, m.Size, tensor.MaxDim)
		}
		if dims != nil && int64(dims[n]) != m.Size {
			return nil, bad("%s.size %d, the model's mode %d has %d entities", where, m.Size, n+1, dims[n])
		}
		if total += m.Size; total > tensor.MaxDim {
			return nil, bad("%d entities over all modes: above the limit %d", total, tensor.MaxDim)
		}
		dm := &Dict{Column: m.Column, Kind: m.Kind, Size: int(m.Size)}
		switch m.Kind {
		case KindTime:
			if m.HasIDs {
				return nil, bad("%s: a time mode has no ids", where)
			}
			b, err := ParseBin(m.Bin)
			if err != nil {
				return nil, bad("%s.bin: %v", where, err)
			}
			if m.BinSeconds != b.Seconds {
				return nil, bad("%s.bin_seconds %d: bin %s has %d", where, m.BinSeconds, b, b.Seconds)
			}
			if m.FirstBin == nil {
				return nil, bad("%s.first_bin: missing", where)
			}
			lo, hi := b.Of(minTime), b.Of(maxTime)
			if *m.FirstBin < lo || *m.FirstBin > hi || *m.FirstBin+m.Size-1 > hi {
				return nil, bad("%s: bins %d…%d of %s: outside years 1…9999", where, *m.FirstBin, *m.FirstBin+m.Size-1, b)
			}
			dm.Bin, dm.First = b, *m.FirstBin
			if o := dm.Origin(); m.Origin != o {
				return nil, bad("%s.origin %s: first_bin %d of %s starts at %s", where, tensor.Echo(m.Origin), dm.First, b, o)
			}
		case KindInt, KindString, KindMixed:
			if m.Bin != "" || m.BinSeconds != 0 || m.FirstBin != nil || m.Origin != "" {
				return nil, bad("%s: a mode of IDs has no bin", where)
			}
			if int64(len(m.IDs)) != m.Size {
				return nil, bad("%s: %d ids, its size is %d", where, len(m.IDs), m.Size)
			}
			if m.Kind == KindInt && m.notInt >= 0 {
				return nil, bad("%s.ids[%d] = %s: the kind int wants integers", where, m.notInt, tensor.Echo(m.IDs[m.notInt]))
			}
			dm.IDs, dm.index = m.IDs, m.index
		default:
			return nil, bad("%s.kind %s: want int, string, mixed or time", where, tensor.Echo(m.Kind))
		}
		d.Modes = append(d.Modes, dm)
	}
	return d, nil
}

// dictReader reads a dictionaries file token by token (json.Decoder's
// Token; scalars with Decode).
type dictReader struct {
	dec   *json.Decoder
	dims  []int // the model's mode sizes, or nil
	total int64 // IDs read over all modes
}

func dictErrorf(format string, a ...any) error { return &dictError{fmt.Sprintf(format, a...)} }

// object reads a JSON object (where names it in errors), calling member
// for each key with the decoder before its value; a key given twice is
// an error.
func (r *dictReader) object(where string, member func(key string) error) error {
	if err := r.delim('{', where, "an object"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for r.dec.More() {
		t, err := r.dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if seen[key] {
			if where == "" {
				return dictErrorf("field %s given twice", tensor.Echo(key))
			}
			return dictErrorf("%s: field %s given twice", where, tensor.Echo(key))
		}
		seen[key] = true
		if err := member(key); err != nil {
			return err
		}
	}
	_, err := r.dec.Token() // '}'
	return err
}

// delim reads the delimiter d ('{' or '['), or says that where is not
// what.
func (r *dictReader) delim(d json.Delim, where, what string) error {
	t, err := r.dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		if where == "" {
			return fmt.Errorf("want a JSON object")
		}
		return dictErrorf("%s: want %s", where, what)
	}
	return nil
}

// value reads the next value, a scalar, into v (*string, *int, *int64
// or **int64; null leaves v as it is), naming where. An array or object
// is refused at its first token, never read whole.
func (r *dictReader) value(where string, v any) error {
	t, err := r.dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil // null: the field's zero value, as encoding/json leaves it
	}
	got := "a JSON " + jsonKind(t)
	switch v := v.(type) {
	case *string:
		s, ok := t.(string)
		if !ok {
			return dictErrorf("%s: want a string, got %s", where, got)
		}
		*v = s
		return nil
	case **int64:
		var x int64
		if err := intToken(t, where, got, &x); err != nil {
			return err
		}
		*v = &x
		return nil
	case *int64:
		return intToken(t, where, got, v)
	case *int:
		var x int64
		if err := intToken(t, where, got, &x); err != nil {
			return err
		}
		*v = int(x)
		return nil
	}
	panic("dictReader.value: unsupported type")
}

// intToken stores the integer token t in x.
func intToken(t json.Token, where, got string, x *int64) error {
	n, ok := t.(json.Number)
	if !ok {
		return dictErrorf("%s: want an integer, got %s", where, got)
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return dictErrorf("%s %s: want an integer", where, tensor.Echo(n.String()))
	}
	*x = v
	return nil
}

// jsonKind names the kind of the token t for a message.
func jsonKind(t json.Token) string {
	switch t := t.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case json.Delim:
		if t == '[' {
			return "array"
		}
		return "object"
	}
	return "null"
}

// read reads the whole file.
func (r *dictReader) read() (*dictJSON, error) {
	js := &dictJSON{}
	err := r.object("", func(key string) error {
		switch key {
		case "format":
			return r.value("format", &js.Format)
		case "version":
			return r.value("version", &js.Version)
		case "table":
			return r.value("table", &js.Table)
		case "value":
			return r.value("value", &js.Value)
		case "ids":
			return r.value("ids", &js.IDs)
		case "modes":
			if err := r.delim('[', "modes", "an array"); err != nil {
				return err
			}
			for r.dec.More() {
				n := len(js.Modes)
				if n >= MaxOrder {
					return dictErrorf("more than %d modes", MaxOrder)
				}
				if r.dims != nil && n >= len(r.dims) {
					return dictErrorf("more than %d modes, the model's order is %d", len(r.dims), len(r.dims))
				}
				m, err := r.mode(n)
				if err != nil {
					return err
				}
				js.Modes = append(js.Modes, m)
			}
			_, err := r.dec.Token() // ']'
			return err
		}
		return fmt.Errorf("unknown field %s", tensor.Echo(key))
	})
	if err != nil {
		return nil, err
	}
	if _, err := r.dec.Token(); err != io.EOF {
		return nil, dictErrorf("more after the JSON object")
	}
	return js, nil
}

// mode reads modes[n].
func (r *dictReader) mode(n int) (*modeJSON, error) {
	where := fmt.Sprintf("modes[%d]", n)
	m := &modeJSON{notInt: -1}
	err := r.object(where, func(key string) error {
		at := where + "." + key
		switch key {
		case "column":
			return r.value(at, &m.Column)
		case "kind":
			return r.value(at, &m.Kind)
		case "size":
			if err := r.value(at, &m.Size); err != nil {
				return err
			}
			if m.Size < 1 || m.Size > tensor.MaxDim {
				return dictErrorf("%s %d: want 1…%d", at, m.Size, tensor.MaxDim)
			}
			if r.dims != nil && int64(r.dims[n]) != m.Size {
				return dictErrorf("%s %d, the model's mode %d has %d entities", at, m.Size, n+1, r.dims[n])
			}
			return nil
		case "ids":
			return r.ids(n, m, at)
		case "bin":
			return r.value(at, &m.Bin)
		case "bin_seconds":
			return r.value(at, &m.BinSeconds)
		case "first_bin":
			return r.value(at, &m.FirstBin)
		case "origin":
			return r.value(at, &m.Origin)
		}
		return fmt.Errorf("unknown field %s in %s", tensor.Echo(key), where)
	})
	return m, err
}

// ids reads the array modes[n].ids (at) into m: every ID checked as it
// comes (a scalar, at most MaxID bytes, not seen before) and counted
// against the model's mode size (dims), tensor.MaxDim and the IDs of
// every mode together, so that a file of more IDs than its model has is
// refused after the model's count, having held no more.
func (r *dictReader) ids(n int, m *modeJSON, at string) error {
	t, err := r.dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil // null: no ids
	}
	if t != json.Delim('[') {
		return dictErrorf("%s: want an array", at)
	}
	m.HasIDs = true
	limit, why := int64(tensor.MaxDim), fmt.Sprintf("above the limit %d", tensor.MaxDim)
	if r.dims != nil {
		limit, why = int64(r.dims[n]), fmt.Sprintf("the model's mode %d has %d entities", n+1, r.dims[n])
	}
	if m.Size > 0 && m.Size < limit { // the size, when it came first
		limit, why = m.Size, fmt.Sprintf("its size is %d", m.Size)
	}
	m.index = map[string]int32{}
	for r.dec.More() {
		i := len(m.IDs)
		if int64(i) >= limit {
			return dictErrorf("%s: more than %d IDs, %s", at, limit, why)
		}
		if r.total >= tensor.MaxDim {
			return dictErrorf("more than %d IDs over all modes: above the limit %d", tensor.MaxDim, tensor.MaxDim)
		}
		t, err := r.dec.Token()
		if err != nil {
			return err
		}
		var s string
		isInt := false
		switch v := t.(type) {
		case string:
			s = v
		case json.Number:
			s = v.String()
			x, err := strconv.ParseInt(s, 10, 64)
			isInt = err == nil && strconv.FormatInt(x, 10) == s
		case bool:
			s = strconv.FormatBool(v)
		default:
			return dictErrorf("%s[%d]: want a string, number or boolean", at, i)
		}
		if len(s) > MaxID {
			return dictErrorf("%s[%d]: %d bytes, above the limit %d", at, i, len(s), MaxID)
		}
		if j, dup := m.index[s]; dup {
			return dictErrorf("%s[%d] = %s: the same ID as ids[%d]", at, i, tensor.Echo(s), j)
		}
		if !isInt && m.notInt < 0 {
			m.notInt = i
		}
		m.index[s] = int32(i)
		m.IDs = append(m.IDs, s)
		r.total++
	}
	_, err = r.dec.Token() // ']'
	return err
}

// WriteJSONFile writes d to path atomically (tensor.AtomicWrite).
func (d *Dicts) WriteJSONFile(path string) error {
	return tensor.AtomicWrite(path, d.WriteJSON)
}
