package table

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestDictsCounted: a dictionaries file of far more IDs than the model's
// mode has is refused after the model's count, having decoded no more:
// 2 million IDs against a mode of 3 (it was decoded whole first, 5.2 GB
// for a 1 GB file of 500 million IDs, then out of memory). A size given
// before the IDs bounds them too.
func TestDictsCounted(t *testing.T) {
	dir := t.TempDir()
	var ids strings.Builder
	for i := range 2_000_000 {
		if i > 0 {
			ids.WriteByte(',')
		}
		ids.WriteString(strconv.Itoa(i))
	}
	head := `{"format": "dainx-dictionaries", "version": 1, "table": "csv", "value": "r", "ids": "first", "modes": [`
	tail := `, {"column": "i", "kind": "string", "size": 2, "ids": ["a", "b"]}]}`
	for _, tc := range []struct {
		name, mode string
		dims       []int
		want       string
	}{
		{"dims", `{"column": "u", "kind": "int", "ids": [` + ids.String() + `], "size": 3}`, []int{3, 2}, "modes[0].ids: more than 3 IDs, the model's mode 1 has 3 entities"},
		{"size first", `{"column": "u", "kind": "int", "size": 3, "ids": [` + ids.String() + `]}`, nil, "modes[0].ids: more than 3 IDs, its size is 3"},
		{"one-char duplicates", `{"column": "u", "kind": "string", "ids": ["a"` + strings.Repeat(`,"a"`, 1_000_000) + `]}`, []int{5, 2}, `modes[0].ids[1] = "a": the same ID as ids[0]`},
	} {
		p := write(t, dir, "d.json", head+tc.mode+tail)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadJSON(p, tc.dims)
		runtime.ReadMemStats(&after)
		if err == nil || err.Error() != "dictionaries "+p+": "+tc.want {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
			t.Errorf("%s: %d KiB allocated to refuse it", tc.name, got>>10)
		}
	}
	// Fields that are not scalars are refused at their first token.
	for _, tc := range []struct{ edit, want string }{
		{`"format": [1, 2]`, "format: want a string, got a JSON array"},
		{`"version": "1"`, "version: want an integer, got a JSON string"},
		{`"table": "csv", "table": "tsv"`, `field "table" given twice`},
	} {
		s := strings.Replace(head, `"table": "csv"`, tc.edit, 1)
		s = strings.Replace(s, `"format": "dainx-dictionaries", `, "", strings.Count(tc.edit, "format"))
		s = strings.Replace(s, `"version": 1, `, "", strings.Count(tc.edit, "version"))
		p := write(t, dir, "e.json", s+`{"column": "u", "kind": "int", "size": 1, "ids": [1]}`+tail)
		if _, err := ReadJSON(p, nil); err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.edit, err, tc.want)
		}
	}
}

// TestColumnsMatched: cells read against a model's dictionaries must
// name its columns in its order: a swap (item IDs taken for users) or a
// column it lacks is refused naming the columns.
func TestColumnsMatched(t *testing.T) {
	day, err := ParseBin("day")
	if err != nil {
		t.Fatal(err)
	}
	known := &Dicts{Value: "r", Modes: []*Dict{
		{Column: "user", Kind: KindInt, IDs: []string{"1", "2"}, Size: 2},
		{Column: "item", Kind: KindInt, IDs: []string{"1", "2"}, Size: 2},
		{Column: "time", Kind: KindTime, Bin: day, First: 18262, Size: 3},
	}}
	for _, tc := range []struct{ index, want string }{
		{"user,item,time", ""},
		{"user,item,time:day", ""},
		{"item,user,time", `the model's columns in another order ("item" is the model's mode 2, not 1; "user" is the model's mode 1, not 2): give them as the model's modes, user,item,time:day`},
		{"user,film,time", `column "film" (mode 2) is not one of the model's: its modes are the columns user,item,time:day, in that order`},
		{"user,item", "-index names 2 columns, the model has 3 modes (user,item,time:day)"},
	} {
		_, err := Resolve(mustSpec(t, tc.index, "r", false), known)
		if (tc.want == "") != (err == nil) || (err != nil && err.Error() != tc.want) {
			t.Errorf("-index %s: %v, want %q", tc.index, err, tc.want)
		}
	}
}

// TestParquetIntegers: every integer type of a Parquet ID column keeps
// its IDs exactly: a UINT64 above 2⁶³−1 (it became -1), a UINT32 above
// 2³¹−1 (it became negative), signed types as they are. A UINT64 ID
// beyond int64 makes its mode's IDs text, as a CSV's would be, so that
// the dictionaries and outputs write it as it is. An integer value column
// is exact too.
func TestParquetIntegers(t *testing.T) {
	type row struct {
		U64 uint64 `parquet:"u64"`
		U32 uint32 `parquet:"u32"`
		U8  uint8  `parquet:"u8"`
		I16 int16  `parquet:"i16"`
		I64 int64  `parquet:"i64"`
		R   uint64 `parquet:"r"`
	}
	rows := []row{
		{1, 1, 1, -1, math.MinInt64, 1},
		{1 << 63, 4_000_000_000, 255, math.MaxInt16, math.MaxInt64, 1 << 63},
		{math.MaxUint64, math.MaxUint32, 0, math.MinInt16, 0, 1<<63 + 2048},
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "ids.parquet")
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	c, d, err := ReadFile(p, mustSpec(t, "u64,u32,u8,i16,i64", "r", false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"1", "9223372036854775808", "18446744073709551615"},
		{"1", "4000000000", "4294967295"},
		{"1", "255", "0"},
		{"-1", "32767", "-32768"},
		{"-9223372036854775808", "9223372036854775807", "0"},
	}
	kinds := []string{KindString, KindInt, KindInt, KindInt, KindInt}
	for n, m := range d.Modes {
		if !slices.Equal(m.IDs, want[n]) || m.Kind != kinds[n] {
			t.Errorf("%s: %s IDs %q, want %s %q", m.Column, m.Kind, m.IDs, kinds[n], want[n])
		}
	}
	if c.Val[1] != 1<<63 || c.Val[2] != 1<<63+2048 {
		t.Errorf("values %v", c.Val)
	}
	// The dictionaries round-trip, and the cells read against them.
	var b bytes.Buffer
	if err := d.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	jp := write(t, dir, "d.json", b.String())
	k, err := ReadJSON(jp, c.Dims)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	again, _, err := ReadFile(p, d.Spec(), Options{Known: k})
	if err != nil || !slices.Equal(again.Idx, c.Idx) {
		t.Errorf("against the dictionaries: %v %v, want %v", err, again, c.Idx)
	}
	// A value outside its type's range (a writer's error) names the row
	// and the column.
	schema := parquet.NewSchema("t", parquet.Group{"u": parquet.Uint(8), "r": parquet.Leaf(parquet.DoubleType)})
	q := filepath.Join(dir, "range.parquet")
	f, _ := os.Create(q)
	w := parquet.NewGenericWriter[any](f, schema)
	if _, err := w.WriteRows([]parquet.Row{
		{parquet.DoubleValue(1).Level(0, 0, 0), parquet.Int32Value(7).Level(0, 0, 1)}, // columns by name: r, u
		{parquet.DoubleValue(1).Level(0, 0, 0), parquet.Int32Value(300).Level(0, 0, 1)},
	}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f.Close()
	if _, _, err := ReadFile(q, mustSpec(t, "u", "r", false), Options{}); err == nil || !strings.Contains(err.Error(), q+`: row 2: column "u": value 300 is outside the range of its type`) {
		t.Errorf("UINT_8 of 300: %v", err)
	}
}

// TestParquetColumnKinds: a nested or LIST column is said to be one (it
// was "no column "user"; the file has "user", …"), and Parquet from a
// pipe needs a seekable file (it was "not a Parquet file: … illegal
// seek").
func TestParquetColumnKinds(t *testing.T) {
	type inner struct {
		A int64 `parquet:"a"`
	}
	type row struct {
		User  inner   `parquet:"user"`
		Items []int64 `parquet:"items,list"`
		Tags  []int64 `parquet:"tags"`
		R     float64 `parquet:"r"`
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "n.parquet")
	if err := parquet.WriteFile(p, []row{{inner{1}, []int64{1}, []int64{2}, 1}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ col, want string }{
		{"user", `column "user" is a nested column (a group of 1 fields), which is not supported`},
		{"items", `column "items" is a LIST column, which is not supported`},
		{"tags", `column "tags" is a repeated (LIST) column, which is not supported`},
	} {
		if _, _, err := ReadFile(p, mustSpec(t, tc.col, "r", false), Options{}); err == nil || !strings.HasPrefix(err.Error(), p+": "+tc.want) {
			t.Errorf("%s: %v, want %q", tc.col, err, tc.want)
		}
	}
	ok := filepath.Join(dir, "ok.parquet")
	if err := parquet.WriteFile(ok, []pqRow{{"a", 1, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(ok)
	fifo := filepath.Join(dir, "fifo.parquet")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes:", err)
	}
	go func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Write(data)
			w.Close()
		}
	}()
	_, _, err := ReadFile(fifo, mustSpec(t, "user", "rating", false), Options{})
	if want := fifo + ": Parquet needs a seekable file (a pipe cannot be read as Parquet)"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("pipe: %v, want %q", err, want)
	}
}

// TestTableTruncatedGzip: a gzip CSV cut short is a truncated stream
// after the last whole line, not a record of too few fields.
func TestTableTruncatedGzip(t *testing.T) {
	var text strings.Builder
	text.WriteString("user,item,rating\n")
	for i := range 5000 {
		fmt.Fprintf(&text, "u%d,i%d,%d.5\n", i, i%97, i%5)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(text.String()))
	zw.Close()
	dir := t.TempDir()
	for cut := 200; cut < z.Len()-8; cut += z.Len() / 7 {
		p := filepath.Join(dir, "tr.csv.gz")
		os.WriteFile(p, z.Bytes()[:cut], 0o644)
		_, _, err := ReadFile(p, mustSpec(t, "user,item", "rating", false), Options{})
		if err == nil || !strings.HasPrefix(err.Error(), p+": truncated gzip stream (unexpected EOF) after line ") {
			t.Errorf("cut at %d: %v", cut, err)
		}
	}
}

// TestSortedBigIntegers: -ids sorted orders integer IDs beyond int64 (a
// Parquet UINT64's, a CSV's) exactly, by value, not as float64 (where
// 9999999999999999999 and 10000000000000000000 are one number).
func TestSortedBigIntegers(t *testing.T) {
	type row struct {
		U uint64  `parquet:"u"`
		R float64 `parquet:"r"`
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "u.parquet")
	if err := parquet.WriteFile(p, []row{{10000000000000000000, 1}, {math.MaxUint64, 2}, {9999999999999999999, 3}, {1, 4}}); err != nil {
		t.Fatal(err)
	}
	_, d, err := ReadFile(p, mustSpec(t, "u", "r", true), Options{})
	if want := []string{"1", "9999999999999999999", "10000000000000000000", "18446744073709551615"}; err != nil || !slices.Equal(d.Modes[0].IDs, want) {
		t.Errorf("parquet: %v %q, want %q", err, d.Modes[0].IDs, want)
	}
	q := write(t, dir, "b.csv", "u,r\n99999999999999999999,1\n-5,2\n-100000000000000000000,3\n3,4\n-99999999999999999999,5\n0,6\n")
	_, d, err = ReadFile(q, mustSpec(t, "u", "r", true), Options{})
	if want := []string{"-100000000000000000000", "-99999999999999999999", "-5", "0", "3", "99999999999999999999"}; err != nil || !slices.Equal(d.Modes[0].IDs, want) {
		t.Errorf("csv: %v %q, want %q", err, d.Modes[0].IDs, want)
	}
}
