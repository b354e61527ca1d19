package table

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/dainx/dainx/tensor"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSpec(t *testing.T, index, value string, sorted bool) Spec {
	t.Helper()
	m, err := ParseIndex(index)
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Modes: m, Value: value, Sorted: sorted}
}

const small = `user,item,when,rating
u9,b,2020-01-02T10:00:00Z,4
u1,a,2020-01-01T23:59:59Z,3.5
u9,a,2020-01-04T00:00:00+02:00,1
"u1",c,1578096000,2
`

// TestReadCSV: IDs numbered by first appearance or sorted, day bins from
// the first day (an offset converts to UTC, Unix seconds read as such),
// the dictionaries' labels.
func TestReadCSV(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "s.csv", small)
	c, d, err := ReadFile(p, mustSpec(t, "user,item,when:day", "rating", false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// when: 2020-01-02 (day 18263), 2020-01-01 (18262), 2020-01-03T22:00Z (18264), 1578096000 = 2020-01-04 (18265).
	wantIdx := []int32{0, 0, 1, 1, 1, 0, 0, 1, 2, 1, 2, 3}
	if !slices.Equal(c.Idx, wantIdx) || !slices.Equal(c.Val, []float64{4, 3.5, 1, 2}) || !slices.Equal(c.Dims, []int{2, 3, 4}) {
		t.Fatalf("got %v %v %v", c.Idx, c.Val, c.Dims)
	}
	if d.Modes[0].Kind != KindString || !slices.Equal(d.Modes[0].IDs, []string{"u9", "u1"}) {
		t.Errorf("user dict %+v", d.Modes[0])
	}
	tm := d.Modes[2]
	if tm.Kind != KindTime || tm.Origin() != "2020-01-01T00:00:00Z" || tm.Label(3) != "2020-01-04T00:00:00Z" || tm.Size != 4 {
		t.Errorf("time dict %+v origin %s", tm, tm.Origin())
	}
	c2, d2, err := ReadFile(p, mustSpec(t, "user,item,when:day", "rating", true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d2.Modes[0].IDs, []string{"u1", "u9"}) || !slices.Equal(d2.Modes[1].IDs, []string{"a", "b", "c"}) {
		t.Errorf("sorted: %v %v", d2.Modes[0].IDs, d2.Modes[1].IDs)
	}
	// Every cell names the same IDs either way.
	for k := 0; k < c.NNZ(); k++ {
		for n := range 3 {
			if a, b := d.Modes[n].Label(c.Cell(k)[n]), d2.Modes[n].Label(c2.Cell(k)[n]); a != b {
				t.Errorf("cell %d mode %d: %s vs %s", k, n, a, b)
			}
		}
	}
}

// TestSortedNumbers: numeric IDs sort as numbers; integer IDs are kind
// int; text that is not a canonical integer is kind string.
func TestSortedNumbers(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "n.csv", "a,b,v\n10,x10,1\n9,x9,1\n100,x100,1\n-3,x-3,1\n")
	_, d, err := ReadFile(p, mustSpec(t, "a,b", "v", true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Modes[0].IDs, []string{"-3", "9", "10", "100"}) || d.Modes[0].Kind != KindInt {
		t.Errorf("numbers: %v %s", d.Modes[0].IDs, d.Modes[0].Kind)
	}
	if !slices.Equal(d.Modes[1].IDs, []string{"x-3", "x10", "x100", "x9"}) || d.Modes[1].Kind != KindString {
		t.Errorf("strings: %v %s", d.Modes[1].IDs, d.Modes[1].Kind)
	}
	p = write(t, dir, "f.csv", "a,v\n1.5,1\n007,1\n-2,1\n")
	_, d, err = ReadFile(p, mustSpec(t, "a", "v", true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Modes[0].IDs, []string{"-2", "1.5", "007"}) || d.Modes[0].Kind != KindString {
		t.Errorf("decimals: %v %s", d.Modes[0].IDs, d.Modes[0].Kind)
	}
}

// TestTSVAndGzip: a .tsv table is tab-separated; gzip is found by content.
func TestTSVAndGzip(t *testing.T) {
	dir := t.TempDir()
	tsv := strings.NewReplacer(",", "\t").Replace(small)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(tsv))
	zw.Close()
	p := write(t, dir, "s.tsv", z.String())
	c, _, err := ReadFile(p, mustSpec(t, "user,item,when:day", "rating", false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _, _ := ReadFile(write(t, dir, "s.csv", small), mustSpec(t, "user,item,when:day", "rating", false), Options{})
	if !slices.Equal(c.Idx, ref.Idx) || !slices.Equal(c.Val, ref.Val) {
		t.Errorf("tsv.gz %v, csv %v", c.Idx, ref.Idx)
	}
}

// TestBins: every bin unit, its start and ParseTime's forms.
func TestBins(t *testing.T) {
	mon := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC).Unix() // a Monday
	for _, c := range []struct {
		bin   string
		sec   int64
		start string
	}{
		{"hour", 3600*5 + 59, "1970-01-01T05:00:00Z"},
		{"day", -1, "1969-12-31T00:00:00Z"},
		{"week", mon + 6*86400 + 86399, "2024-03-04T00:00:00Z"},
		{"week", mon - 1, "2024-02-26T00:00:00Z"},
		{"month", time.Date(2019, 12, 31, 23, 0, 0, 0, time.UTC).Unix(), "2019-12-01T00:00:00Z"},
		{"month", -1, "1969-12-01T00:00:00Z"},
		{"900", 1000, "1970-01-01T00:15:00Z"},
	} {
		b, err := ParseBin(c.bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Label(b.Of(c.sec)); got != c.start {
			t.Errorf("%s of %d: start %s, want %s", c.bin, c.sec, got, c.start)
		}
	}
	for _, bad := range []string{"0", "-5", "days", ""} {
		if _, err := ParseBin(bad); err == nil {
			t.Errorf("ParseBin(%q) accepted", bad)
		}
	}
	for s, want := range map[string]int64{
		"1537799250": 1537799250, "1537799250.9": 1537799250, "-0.5": -1,
		"2018-09-24T14:27:30Z": 1537799250, "2018-09-24T16:27:30+02:00": 1537799250, "2018-09-24 14:27:30": 1537799250,
		"2018-09-24T14:27:30.75Z": 1537799250, "2018-09-24": 1537747200, "2018-09-24T14:27": 1537799220,
	} {
		got, err := ParseTime(s)
		if err != nil || got != want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "2018-13-01", "1e300", "", "NaN"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

// TestBadRows: every bad input names the file, the line and the column.
func TestBadRows(t *testing.T) {
	dir := t.TempDir()
	spec := mustSpec(t, "user,item,when:day", "rating", false)
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"missing-col", "user,item,rating\nu,a,1\n", []string{":1: no column \"when\" (-index)", `"user", "item", "rating"`}},
		{"missing-value", "user,item,when\nu,a,1\n", []string{":1: no column \"rating\" (-value)"}},
		{"twice", "user,item,when,rating,user\nu,a,1,1,u\n", []string{":1: column \"user\" appears more than once"}},
		{"fields", "user,item,when,rating\nu,a,1,1\nu,b,1\n", []string{":3: 3 fields, the header has 4 columns"}},
		{"number", "user,item,when,rating\nu,a,1,1\n\nu,b,1,good\n", []string{":4: column \"rating\": value \"good\" is not a number"}},
		{"nan", "user,item,when,rating\nu,a,1,NaN\n", []string{":2: column \"rating\": value NaN is not finite"}},
		{"empty-id", "user,item,when,rating\nu,,1,1\n", []string{":2: column \"item\": empty ID"}},
		{"time", "user,item,when,rating\nu,a,2018-02-30,1\n", []string{":2: column \"when\": \"2018-02-30\" is not a time"}},
		{"dup", "user,item,when,rating\nu,a,2020-01-01T01:00:00Z,1\nu,b,1,1\nu,a,2020-01-01T20:00:00Z,2\n", []string{":4: duplicate cell (user=\"u\", item=\"a\", when=\"2020-01-01T00:00:00Z\"), first on line 2"}},
		{"quote", "user,item,when,rating\nu,\"a,1,1\n", []string{`:2: extraneous or missing " in quoted-field (byte 10 of the line)`}},
		{"bare-quote", "user,item,when,rating\nu,a\"b,1,1\n", []string{`:2: bare " in non-quoted-field (byte 4 of the line)`}},
		{"range", "user,item,when,rating\nu,a,99999999999999,1\n", []string{`:2: column "when": "99999999999999" is not a time (out of range (years 1 to 9999))`}},
		{"empty", "", []string{"empty: no header line"}},
		{"header-only", "user,item,when,rating\n", []string{"no rows"}},
	} {
		p := write(t, dir, c.name+".csv", c.body)
		_, _, err := ReadFile(p, spec, Options{})
		var pe *tensor.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want a *tensor.ParseError", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), p) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
	// Bounds: a line longer than MaxLine, too many columns.
	old := MaxLine
	MaxLine = 64
	defer func() { MaxLine = old }()
	p := write(t, dir, "long.csv", "user,item,when,rating\nu,a,1,1\nu,"+strings.Repeat("b", 100)+",1,1\n")
	if _, _, err := ReadFile(p, spec, Options{}); err == nil || !strings.Contains(err.Error(), ":3: line longer than the limit of 64 bytes") {
		t.Errorf("long line: %v", err)
	}
	MaxLine = old
	p = write(t, dir, "wide.csv", strings.Repeat("c,", MaxColumns)+"x\n")
	if _, _, err := ReadFile(p, spec, Options{}); err == nil || !strings.Contains(err.Error(), "columns: above the limit") {
		t.Errorf("wide: %v", err)
	}
}

// pqRow is the Parquet twin of small's rows in a test.
type pqRow struct {
	User   string  `parquet:"user"`
	Item   int64   `parquet:"item"`
	When   int64   `parquet:"when,timestamp(millisecond)"`
	Rating float64 `parquet:"rating"`
}

// TestParquet: a Parquet file gives the cells its CSV twin gives
// (integer IDs stay integers, a TIMESTAMP column bins as times), and a
// null, a missing column and a time outside a known model are named.
func TestParquet(t *testing.T) {
	dir := t.TempDir()
	rows := []pqRow{
		{"u9", 20, 1577959200000, 4}, {"u1", 10, 1577923199000, 3.5}, {"u9", 10, 1578088800000, 1}, {"u1", 30, 1578096000000, 2},
	}
	p := filepath.Join(dir, "s.parquet")
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	csvp := write(t, dir, "s.csv", "user,item,when,rating\nu9,20,1577959200,4\nu1,10,1577923199,3.5\nu9,10,1578088800,1\nu1,30,1578096000,2\n")
	for _, sorted := range []bool{false, true} {
		spec := mustSpec(t, "user,item,when:hour", "rating", sorted)
		a, da, err := ReadFile(p, spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, db, err := ReadFile(csvp, spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Idx, b.Idx) || !slices.Equal(a.Val, b.Val) || !slices.Equal(a.Dims, b.Dims) {
			t.Errorf("sorted %v: parquet %v %v, csv %v %v", sorted, a.Idx, a.Dims, b.Idx, b.Dims)
		}
		if da.Modes[1].Kind != KindInt || !slices.Equal(da.Modes[1].IDs, db.Modes[1].IDs) || da.Modes[2].First != db.Modes[2].First {
			t.Errorf("dicts %+v vs %+v", da.Modes[1], db.Modes[1])
		}
	}
	if _, _, err := ReadFile(p, mustSpec(t, "user,item,time:day", "rating", false), Options{}); err == nil || !strings.Contains(err.Error(), `no column "time"; the file has "user", "item", "when", "rating"`) {
		t.Errorf("missing column: %v", err)
	}
	if _, _, err := ReadFile(p, mustSpec(t, "user,rating", "item", false), Options{}); err == nil || !strings.Contains(err.Error(), `column "rating" has type DOUBLE: IDs must be integers or text`) {
		t.Errorf("float IDs: %v", err)
	}
	type optRow struct {
		User   string   `parquet:"user"`
		Rating *float64 `parquet:"rating,optional"`
	}
	one := 1.0
	q := filepath.Join(dir, "null.parquet")
	if err := parquet.WriteFile(q, []optRow{{"a", &one}, {"b", nil}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(q, mustSpec(t, "user", "rating", false), Options{}); err == nil || err.Error() != q+`: row 2: column "rating": null` {
		t.Errorf("null: %v", err)
	}
	// Not Parquet at all.
	if _, _, err := ReadFile(csvp, mustSpec(t, "user", "rating", false), Options{Format: Parquet}); err == nil || !strings.Contains(err.Error(), "not a Parquet file") {
		t.Errorf("csv as parquet: %v", err)
	}
}

// TestKnown: cells read against saved dictionaries map to the same
// indices; an unknown ID or a time outside the bins is named.
func TestKnown(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "s.csv", small)
	spec := mustSpec(t, "user,item,when:day", "rating", true)
	c, d, err := ReadFile(p, spec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := d.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	jp := write(t, dir, DictFile, js.String())
	k, err := ReadJSON(jp, c.Dims)
	if err != nil {
		t.Fatal(err)
	}
	q := write(t, dir, "q.csv", "item,user,when\nc,u1,2020-01-04\nc,u1,2020-01-04\nb,u9,2020-01-01T05:00:00Z\n")
	qc, _, err := ReadFile(q, Spec{Modes: []Mode{{Column: "user"}, {Column: "item"}, {Column: "when"}}}, Options{Known: k, Repeats: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 2, 3, 0, 2, 3, 1, 1, 0}; !slices.Equal(qc.Idx, want) || !slices.Equal(qc.Dims, c.Dims) {
		t.Errorf("known: %v, want %v", qc.Idx, want)
	}
	noValue := k.Spec()
	noValue.Value = ""
	q = write(t, dir, "u.csv", "user,item,when\nu1,a,2020-01-01\nu7,a,2020-01-01\n")
	if _, _, err := ReadFile(q, noValue, Options{Known: k}); err == nil || err.Error() != q+`:3: column "user": unknown ID "u7": the model was trained without it (it knows 2 IDs of user)` {
		t.Errorf("unknown: %v", err)
	}
	q = write(t, dir, "t.csv", "user,item,when\nu1,a,2020-01-05T00:00:00Z\n")
	if _, _, err := ReadFile(q, noValue, Options{Known: k}); err == nil || !strings.Contains(err.Error(), `:2: column "when": time 2020-01-05T00:00:00Z falls in the bin starting 2020-01-05T00:00:00Z, outside the model's 4 bins of day from 2020-01-01T00:00:00Z`) {
		t.Errorf("time outside: %v", err)
	}
	if _, _, err := ReadFile(q, mustSpec(t, "user,item,when:hour", "", false), Options{Known: k}); err == nil || !strings.Contains(err.Error(), "bins of hour, the model's mode 3 (when) has bins of day") {
		t.Errorf("other bin: %v", err)
	}
}

// TestDictJSON: the dictionaries round-trip, and a file that lies is an
// error naming the field.
func TestDictJSON(t *testing.T) {
	dir := t.TempDir()
	d := &Dicts{Table: Parquet, Value: "r", Sorted: true, Modes: []*Dict{
		{Column: "u", Kind: KindInt, IDs: []string{"-5", "7", "9007199254740993"}, Size: 3},
		{Column: "i \"x\"", Kind: KindString, IDs: []string{"a", "ü", "\x01"}, Size: 3},
		{Column: "t", Kind: KindTime, Bin: Bin{"month", 0}, First: 600, Size: 14},
	}}
	var b bytes.Buffer
	if err := d.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	p := write(t, dir, "d.json", b.String())
	got, err := ReadJSON(p, []int{3, 3, 14})
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if got.Table != Parquet || got.Value != "r" || !got.Sorted || got.Modes[2].Origin() != "2020-01-01T00:00:00Z" ||
		!slices.Equal(got.Modes[0].IDs, d.Modes[0].IDs) || !slices.Equal(got.Modes[1].IDs, d.Modes[1].IDs) || got.Modes[1].Column != d.Modes[1].Column {
		t.Errorf("round trip: %+v", got)
	}
	if _, err := ReadJSON(p, []int{3, 4, 14}); err == nil || !strings.Contains(err.Error(), "modes[1].size 3, the model's mode 2 has 4 entities") {
		t.Errorf("dims: %v", err)
	}
	for _, c := range []struct{ edit, want string }{
		{`"u", "kind": "int", "size": 3, "ids": [-5,7,9007199254740993]`, ""},
		{`"u", "kind": "int", "size": 3, "ids": [-5,7,7]`, "modes[0].ids[2] = \"7\": the same ID as ids[1]"},
		{`"u", "kind": "int", "size": 3, "ids": [-5,7,"9"]`, "modes[0].ids[2] = \"9\": the kind int wants integers"},
		{`"u", "kind": "int", "size": 3, "ids": [-5,7]`, "modes[0]: 2 ids, its size is 3"},
		{`"u", "kind": "int", "size": 3, "ids": [-5,7,{}]`, "modes[0].ids[2]: want a string, number or boolean"},
		{`"u", "kind": "int", "size": 3000000000, "ids": []`, "modes[0].size 3000000000: want 1…2147483647"},
		{`"u", "kind": "float", "size": 3, "ids": [-5,7,8]`, "modes[0].kind \"float\""},
	} {
		s := strings.Replace(b.String(), `"u", "kind": "int", "size": 3, "ids": [-5,7,9007199254740993]`, c.edit, 1)
		s = strings.Replace(s, `"size": 3000000000`, `"size": 3000000000`, 1)
		q := write(t, dir, "e.json", s)
		_, err := ReadJSON(q, nil)
		if c.want == "" {
			if err != nil {
				t.Errorf("unchanged: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "dictionaries "+q) {
			t.Errorf("%s: %v, want %q", c.edit, err, c.want)
		}
	}
	for _, c := range []struct{ old, new, want string }{
		{`"origin": "2020-01-01T00:00:00Z"`, `"origin": "2020-02-01T00:00:00Z"`, "first_bin 600 of month starts at 2020-01-01T00:00:00Z"},
		{`"first_bin": 600`, `"first_bin": 99999999999`, "outside years 1…9999"},
		{`"format": "dainx-dictionaries"`, `"format": "x"`, `format "x"`},
		{`"version": 1`, `"version": 2`, "version 2"},
		{`"modes": [`, `"extra": 1, "modes": [`, "unknown field"},
	} {
		q := write(t, dir, "e.json", strings.Replace(b.String(), c.old, c.new, 1))
		if _, err := ReadJSON(q, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.new, err, c.want)
		}
	}
}

// TestWriter: a table written in each format reads back as the same
// cells (the time column as RFC 3339 start times), with its columns in
// the order given.
func TestWriter(t *testing.T) {
	dir := t.TempDir()
	c, d, err := ReadFile(write(t, dir, "s.csv", small), mustSpec(t, "user,item,when:day", "rating", false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"o.csv", "o.tsv.gz", "o.parquet"} {
		f, _ := FormatOf(name)
		var b bytes.Buffer
		cols := []Column{IDColumn(d.Modes[1]), IDColumn(d.Modes[0]), IDColumn(d.Modes[2]), {"rating", ColFloat}}
		w, err := NewWriter(&b, name, f, cols)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < c.NNZ(); k++ {
			cell := c.Cell(k)
			w.ID(d.Modes[1], cell[1])
			w.ID(d.Modes[0], cell[0])
			w.ID(d.Modes[2], cell[2])
			w.Float(c.Val[k], 64)
			if err := w.EndRow(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		p := write(t, dir, name, b.String())
		got, _, err := ReadFile(p, d.Spec(), Options{Known: d})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got.Idx, c.Idx) || !slices.Equal(got.Val, c.Val) {
			t.Errorf("%s: %v, want %v", name, got.Idx, c.Idx)
		}
		if f == Parquet {
			pf, err := parquet.OpenFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, fl := range pf.Schema().Fields() {
				names = append(names, fl.Name())
			}
			if !slices.Equal(names, []string{"item", "user", "when", "rating"}) {
				t.Errorf("parquet columns %v", names)
			}
		}
		if name == "o.csv" {
			want := "item,user,when,rating\nb,u9,2020-01-02T00:00:00Z,4\n"
			if !strings.HasPrefix(b.String(), want) {
				t.Errorf("csv:\n%s", b.String())
			}
		}
	}
}

func ExampleParseIndex() {
	m, _ := ParseIndex("userId,movieId,timestamp:day")
	fmt.Println(len(m), m[2].Column, m[2].Bin)
	// Output: 3 timestamp day
}

// TestCorruptParquet: a truncated or damaged Parquet file is an error
// naming the file, never a crash.
func TestCorruptParquet(t *testing.T) {
	dir := t.TempDir()
	var rows []pqRow
	for k := range 3000 {
		rows = append(rows, pqRow{fmt.Sprintf("u%d", k%97), int64(k), int64(k) * 3600000, float64(k % 5)})
	}
	p := filepath.Join(dir, "ok.parquet")
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(p)
	spec := mustSpec(t, "user,item,when:hour", "rating", false)
	q := filepath.Join(dir, "bad.parquet")
	for i := 0; i < 200; i++ {
		b := slices.Clone(good)
		switch {
		case i < 40:
			b = b[:len(b)*i/40]
		default:
			for j := 0; j < 1+i%4; j++ {
				k := (i*7919 + j*104729) % len(b)
				b[k] ^= byte(1 + (i+j)%255)
			}
		}
		os.WriteFile(q, b, 0o644)
		c, _, err := ReadFile(q, spec, Options{})
		if err == nil {
			if c.NNZ() != len(rows) {
				t.Errorf("damage %d: %d cells without an error", i, c.NNZ())
			}
			continue
		}
		if !strings.HasPrefix(err.Error(), q) {
			t.Errorf("damage %d: %v", i, err)
		}
	}
}
