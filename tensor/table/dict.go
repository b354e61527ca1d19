package table

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

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

// dictJSON is the dictionaries file as decoded.
type dictJSON struct {
	Format  string     `json:"format"`
	Version int        `json:"version"`
	Table   string     `json:"table"`
	Value   string     `json:"value"`
	IDs     string     `json:"ids"`
	Modes   []modeJSON `json:"modes"`
}

type modeJSON struct {
	Column     string `json:"column"`
	Kind       string `json:"kind"`
	Size       int64  `json:"size"`
	IDs        []any  `json:"ids"`
	Bin        string `json:"bin"`
	BinSeconds int64  `json:"bin_seconds"`
	FirstBin   *int64 `json:"first_bin"`
	Origin     string `json:"origin"`
}

// ReadJSON reads the dictionaries file path as untrusted input: a file
// over MaxDictFile bytes is refused before it is read, and every field is
// checked (the format and version, one mode per entry of dims when dims
// is not nil, each mode's size against dims and against its IDs, IDs
// unique, scalars, at most MaxID bytes, integers where the kind says so,
// a time mode's bin and first bin in range and its origin that bin's
// start). Errors name the file and the field.
func ReadJSON(path string, dims []int) (*Dicts, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("dictionaries %s: "+format, append([]any{path}, a...)...)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, bad("not a regular file")
	}
	if st.Size() > MaxDictFile {
		return nil, bad("%d bytes: above the limit of %d", st.Size(), MaxDictFile)
	}
	dec := json.NewDecoder(io.LimitReader(f, MaxDictFile+1))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var js dictJSON
	if err := dec.Decode(&js); err != nil {
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
			if m.IDs != nil {
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
			dm.IDs = make([]string, len(m.IDs))
			dm.index = make(map[string]int32, len(m.IDs))
			for i, v := range m.IDs {
				var s string
				switch v := v.(type) {
				case string:
					s = v
				case json.Number:
					s = v.String()
				case bool:
					s = strconv.FormatBool(v)
				default:
					return nil, bad("%s.ids[%d]: want a string, number or boolean", where, i)
				}
				if m.Kind == KindInt {
					x, err := strconv.ParseInt(s, 10, 64)
					if _, isNum := v.(json.Number); !isNum || err != nil || strconv.FormatInt(x, 10) != s {
						return nil, bad("%s.ids[%d] = %s: the kind int wants integers", where, i, tensor.Echo(s))
					}
				}
				if len(s) > MaxID {
					return nil, bad("%s.ids[%d]: %d bytes, above the limit %d", where, i, len(s), MaxID)
				}
				if j, dup := dm.index[s]; dup {
					return nil, bad("%s.ids[%d] = %s: the same ID as ids[%d]", where, i, tensor.Echo(s), j)
				}
				dm.index[s] = int32(i)
				dm.IDs[i] = s
			}
		default:
			return nil, bad("%s.kind %s: want int, string, mixed or time", where, tensor.Echo(m.Kind))
		}
		d.Modes = append(d.Modes, dm)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("more after the JSON object")
	}
	return d, nil
}

// WriteJSONFile writes d to path atomically (tensor.AtomicWrite).
func (d *Dicts) WriteJSONFile(path string) error {
	return tensor.AtomicWrite(path, d.WriteJSON)
}
