package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/dainx/dainx/tensor"
)

// synthTable is a small table of ratings by string user and item IDs at
// ISO 8601 times (some with an offset), and its DAIN TSV converted by
// hand: IDs sorted as strings, days (UTC) counted from the first.
type synthTable struct {
	users, items []string  // the row's IDs
	times        []string  // ISO 8601 text
	unix         []int64   // the same times, Unix seconds
	vals         []float64 // ratings
	userIdx      map[string]int
	itemIdx      map[string]int
	day0         int64
	tsv          string // the hand-made conversion, row order
}

func makeSynthTable() *synthTable {
	r := rand.New(rand.NewPCG(7, 11))
	s := &synthTable{userIdx: map[string]int{}, itemIdx: map[string]int{}}
	seen := map[[3]int64]bool{}
	base := time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC).Unix()
	for len(s.vals) < 1500 {
		u, i := r.IntN(40), r.IntN(30)
		sec := base + r.Int64N(20*86400)
		if seen[[3]int64{int64(u), int64(i), sec / 86400}] {
			continue
		}
		seen[[3]int64{int64(u), int64(i), sec / 86400}] = true
		t := time.Unix(sec, 0).UTC()
		text := t.Format(time.RFC3339)
		if len(s.vals)%3 == 0 {
			text = t.In(time.FixedZone("", 5*3600+1800)).Format("2006-01-02T15:04:05-07:00")
		}
		s.users = append(s.users, fmt.Sprintf("user-%02d", u))
		s.items = append(s.items, fmt.Sprintf("item %c%d", 'A'+rune(i%5), i)) // a space: quoted or not, it is one field
		s.times = append(s.times, text)
		s.unix = append(s.unix, sec)
		s.vals = append(s.vals, float64(1+r.IntN(9))/2)
	}
	us, is := slices.Clone(s.users), slices.Clone(s.items)
	sort.Strings(us)
	sort.Strings(is)
	for _, u := range slices.Compact(us) {
		s.userIdx[u] = len(s.userIdx)
	}
	for _, i := range slices.Compact(is) {
		s.itemIdx[i] = len(s.itemIdx)
	}
	s.day0 = slices.Min(s.unix) / 86400
	var b strings.Builder
	for k := range s.vals {
		fmt.Fprintf(&b, "%d\t%d\t%d\t%v\n", s.userIdx[s.users[k]], s.itemIdx[s.items[k]], s.unix[k]/86400-s.day0, s.vals[k])
	}
	s.tsv = b.String()
	return s
}

func (s *synthTable) csv() string {
	var b strings.Builder
	b.WriteString("rating,user,\"item\",time\n")
	for k := range s.vals {
		fmt.Fprintf(&b, "%v,%s,\"%s\",%s\n", s.vals[k], s.users[k], s.items[k], s.times[k])
	}
	return b.String()
}

// cell maps a row of IDs (an output's) to the hand-made indices.
func (s *synthTable) cell(t *testing.T, user, item, when string) string {
	t.Helper()
	u, ok1 := s.userIdx[user]
	i, ok2 := s.itemIdx[item]
	tm, err := time.Parse(time.RFC3339, when)
	if !ok1 || !ok2 || err != nil || tm.Unix()%86400 != 0 {
		t.Fatalf("output row %q %q %q: not IDs of the table (a bin start)", user, item, when)
	}
	return fmt.Sprintf("%d\t%d\t%d", u, i, tm.Unix()/86400-s.day0)
}

type parquetRating struct {
	User   string  `parquet:"user"`
	Item   string  `parquet:"item"`
	Time   int64   `parquet:"time,timestamp(millisecond)"`
	Rating float64 `parquet:"rating"`
}

func readCSVRows(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func readParquetRows(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, fl := range pf.Schema().Fields() {
		header = append(header, fl.Name())
	}
	r := parquet.NewReader(pf)
	var out [][]string
	buf := make([]parquet.Row, 64)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			var rec []string
			for _, v := range row {
				switch v.Kind() {
				case parquet.Double:
					rec = append(rec, strconv.FormatFloat(v.Double(), 'g', -1, 64))
				case parquet.Int64:
					rec = append(rec, strconv.FormatInt(v.Int64(), 10))
				default:
					rec = append(rec, string(v.ByteArray()))
				}
			}
			out = append(out, rec)
		}
		if err != nil {
			break
		}
	}
	return header, out
}

// tsvLines reads a DAIN TSV (or a dainx text output) as lines of fields.
func tsvLines(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		out = append(out, strings.Split(l, "\t"))
	}
	return out
}

type tableReport struct {
	NTrain      int     `json:"n_train"`
	NAug        int     `json:"n_aug"`
	Before      float64 `json:"rmse_before"`
	After       float64 `json:"rmse_after"`
	Fingerprint string  `json:"split_fingerprint"`
	Dims        []int   `json:"dims"`
}

func augmentReport(t *testing.T, args ...string) tableReport {
	t.Helper()
	code, stdout, stderr := runCLI(append(append([]string{"augment", "-backend", "cpu", "-ratio", "0.4"}, args...), tiny...)...)
	if code != exitOK {
		t.Fatalf("augment %v: exit %d: %s", args, code, stderr)
	}
	var r tableReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTableAugment: a CSV table of string IDs and ISO times, its Parquet
// twin (written here with parquet-go) and its DAIN TSV converted by hand
// give the same cells, split and RMSEs; every output of the table runs
// (augmented cells, scores, importance, split) names the cells by ID,
// and mapped through the hand-made dictionaries they are the TSV run's
// outputs line for line.
func TestTableAugment(t *testing.T) {
	dir := t.TempDir()
	s := makeSynthTable()
	csvPath := filepath.Join(dir, "ratings.csv")
	tsvPath := filepath.Join(dir, "ratings.tsv")
	pqPath := filepath.Join(dir, "ratings.parquet")
	os.WriteFile(csvPath, []byte(s.csv()), 0o644)
	os.WriteFile(tsvPath, []byte(s.tsv), 0o644)
	var rows []parquetRating
	for k := range s.vals {
		rows = append(rows, parquetRating{s.users[k], s.items[k], s.unix[k] * 1000, s.vals[k]})
	}
	if err := parquet.WriteFile(pqPath, rows); err != nil {
		t.Fatal(err)
	}

	outs := func(tag, ext string) []string {
		return []string{"-output", filepath.Join(dir, tag+"-aug"+ext), "-scores-out", filepath.Join(dir, tag+"-scores"+ext),
			"-importance-out", filepath.Join(dir, tag+"-imp"+ext), "-split-out", filepath.Join(dir, tag+"-split")}
	}
	ref := augmentReport(t, append([]string{"-input", tsvPath}, outs("tsv", ".tsv")...)...)
	table := []string{"-index", "user,item,time:day", "-value", "rating", "-ids", "sorted"}
	fromCSV := augmentReport(t, append(append([]string{"-input", csvPath}, table...), outs("csv", ".csv")...)...)
	fromPQ := augmentReport(t, append(append([]string{"-input", pqPath}, table...), outs("pq", ".parquet")...)...)
	if !reflect.DeepEqual(fromCSV, ref) || !reflect.DeepEqual(fromPQ, ref) {
		t.Fatalf("reports differ:\ntsv     %+v\ncsv     %+v\nparquet %+v", ref, fromCSV, fromPQ)
	}
	if ref.NAug == 0 || ref.Fingerprint == "" {
		t.Fatalf("report %+v", ref)
	}

	// The augmented cells and the split: IDs, in the input's format.
	type pair struct{ tsv, table string }
	files := []pair{{"tsv-aug.tsv", "-aug"}, {"tsv-split/train.tsv", "-split/train"}, {"tsv-split/val.tsv", "-split/val"}, {"tsv-split/test.tsv", "-split/test"}}
	for _, f := range files {
		want := tsvLines(t, filepath.Join(dir, f.tsv))
		for _, tag := range []string{"csv", "pq"} {
			var header []string
			var got [][]string
			if tag == "csv" {
				got = readCSVRows(t, filepath.Join(dir, tag+f.table+".csv"))
				header, got = got[0], got[1:]
			} else {
				header, got = readParquetRows(t, filepath.Join(dir, tag+f.table+".parquet"))
			}
			if !slices.Equal(header, []string{"user", "item", "time", "rating"}) {
				t.Errorf("%s%s: header %v", tag, f.table, header)
			}
			if len(got) != len(want) {
				t.Fatalf("%s%s: %d rows, the TSV run's %d", tag, f.table, len(got), len(want))
			}
			for k, r := range got {
				if c := s.cell(t, r[0], r[1], r[2]); c != strings.Join(want[k][:3], "\t") || r[3] != want[k][3] {
					t.Fatalf("%s%s row %d: %v = %s %s, the TSV run's %v", tag, f.table, k+1, r, c, r[3], want[k])
				}
			}
		}
	}
	// Scores: the same α and S per training cell.
	want := tsvLines(t, filepath.Join(dir, "tsv-scores.tsv"))
	got := readCSVRows(t, filepath.Join(dir, "csv-scores.csv"))
	if !slices.Equal(got[0], []string{"user", "item", "time", "rating", "alpha", "score"}) || len(got) != len(want) {
		t.Fatalf("scores: header %v, %d rows, want %d", got[0], len(got), len(want))
	}
	for k := 1; k < len(got); k++ {
		r := got[k]
		if s.cell(t, r[0], r[1], r[2]) != strings.Join(want[k][:3], "\t") || !slices.Equal(r[3:], want[k][3:]) {
			t.Fatalf("scores row %d: %v, the TSV run's %v", k, r, want[k])
		}
	}
	// Importance: every entity by ID (a day by its start) with the TSV
	// run's importance of its index.
	want = tsvLines(t, filepath.Join(dir, "tsv-imp.tsv"))
	got = readCSVRows(t, filepath.Join(dir, "csv-imp.csv"))
	if !slices.Equal(got[0], []string{"mode", "id", "importance"}) || len(got) != len(want) {
		t.Fatalf("importance: header %v, %d rows, want %d", got[0], len(got), len(want))
	}
	users := make([]string, len(s.userIdx))
	for u, i := range s.userIdx {
		users[i] = u
	}
	for k := 1; k < len(got); k++ {
		r, w := got[k], want[k]
		i, _ := strconv.Atoi(w[1])
		var id string
		switch w[0] {
		case "1":
			id = users[i]
		case "2":
			for it, j := range s.itemIdx {
				if j == i {
					id = it
				}
			}
		case "3":
			id = time.Unix((s.day0+int64(i))*86400, 0).UTC().Format(time.RFC3339)
		}
		if r[0] != []string{"", "user", "item", "time"}[w[0][0]-'0'] || r[1] != id || r[2] != w[2] {
			t.Fatalf("importance row %d: %v, the TSV run's %v (%s)", k, r, w, id)
		}
	}
	// -output named .tns holds indices (of the hand-made tensor, 1-based).
	tns := filepath.Join(dir, "aug.tns")
	augmentReport(t, append(append([]string{"-input", csvPath}, table...), "-output", tns)...)
	a, err := tensor.ReadFile(tns, tensor.ReadOptions{Format: tensor.TNS, IndexBase: -1})
	b, err2 := tensor.ReadFile(filepath.Join(dir, "tsv-aug.tsv"), tensor.ReadOptions{IndexBase: -1})
	if err != nil || err2 != nil || !slices.Equal(a.Idx, b.Idx) || !slices.Equal(a.Val, b.Val) {
		t.Errorf("-output .tns: %v %v", err, err2)
	}
}

// TestTablePredict: -model-out of a table run keeps the dictionaries;
// predict by ID on the split's test table (CSV and Parquet) reproduces
// rmse_after, writes the IDs in the input's format, and names an unknown
// ID by file, line and column; convert makes the same tensor.
func TestTablePredict(t *testing.T) {
	dir := t.TempDir()
	s := makeSynthTable()
	csvPath := filepath.Join(dir, "ratings.csv")
	os.WriteFile(csvPath, []byte(s.csv()), 0o644)
	m, split := filepath.Join(dir, "m"), filepath.Join(dir, "split")
	code, stdout, stderr := runCLI(append([]string{"augment", "-backend", "cpu", "-input", csvPath, "-index", "user,item,time:day", "-value", "rating", "-model-out", m, "-split-out", split, "-test-frac", "0.2"}, tiny...)...)
	if code != exitOK {
		t.Fatalf("augment: exit %d: %s", code, stderr)
	}
	var rep tableReport
	json.Unmarshal([]byte(stdout), &rep)
	if _, err := os.Stat(filepath.Join(m, "dictionaries.json")); err != nil {
		t.Fatal(err)
	}
	// The test cells by ID; the time column as the split wrote it (bin
	// starts), binned with the model's bins.
	pred := filepath.Join(dir, "pred.csv")
	code, _, stderr = runCLI("predict", "-model", m, "-input", filepath.Join(split, "test.csv"), "-index", "user,item,time", "-value", "rating", "-output", pred)
	if code != exitOK {
		t.Fatalf("predict: exit %d: %s", code, stderr)
	}
	var prep struct {
		RMSE float64 `json:"rmse"`
		N    int     `json:"n_cells"`
	}
	json.Unmarshal([]byte(stderr), &prep)
	if prep.RMSE != rep.After {
		t.Errorf("predict's RMSE on the test table %v, augment's rmse_after %v", prep.RMSE, rep.After)
	}
	test := readCSVRows(t, filepath.Join(split, "test.csv"))
	out := readCSVRows(t, pred)
	if len(out) != len(test) || !slices.Equal(out[0], test[0]) {
		t.Fatalf("predictions: %d rows (header %v), test %d (%v)", len(out), out[0], len(test), test[0])
	}
	for k := 1; k < len(out); k++ {
		if !slices.Equal(out[k][:3], test[k][:3]) {
			t.Fatalf("prediction row %d: %v, test row %v", k, out[k], test[k])
		}
	}
	// The same cells from Parquet (raw times, a TIMESTAMP column): the
	// predictions come back as Parquet.
	var rows []parquetRating
	for _, r := range test[1:] {
		tm, _ := time.Parse(time.RFC3339, r[2])
		v, _ := strconv.ParseFloat(r[3], 64)
		rows = append(rows, parquetRating{r[0], r[1], (tm.Unix() + 3600) * 1000, v})
	}
	pq, pqOut := filepath.Join(dir, "q.parquet"), filepath.Join(dir, "p.parquet")
	if err := parquet.WriteFile(pq, rows); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("predict", "-model", m, "-input", pq, "-index", "user,item,time:day", "-value", "rating", "-output", pqOut)
	json.Unmarshal([]byte(stderr), &prep)
	if code != exitOK || prep.RMSE != rep.After {
		t.Fatalf("predict from Parquet: exit %d, RMSE %v, want %v: %s", code, prep.RMSE, rep.After, stderr)
	}
	header, prow := readParquetRows(t, pqOut)
	if !slices.Equal(header, []string{"user", "item", "time", "rating"}) || len(prow) != len(out)-1 {
		t.Fatalf("Parquet predictions: %v, %d rows", header, len(prow))
	}
	for k, r := range prow {
		if !slices.Equal(r[:3], out[k+1][:3]) {
			t.Fatalf("Parquet prediction row %d: %v, CSV's %v", k, r, out[k+1])
		}
	}

	// Errors: an unknown ID, a time outside the model's days, flags that
	// do not fit the model or a tensor model.
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("item,user,time\n"+strings.Join(test[1][1:2], "")+","+test[1][0]+",2021-03-02\nitem A0,user-99,2021-03-02\n"), 0o644)
	code, _, stderr = runCLI("predict", "-model", m, "-input", bad, "-index", "user,item,time")
	if code != exitFailure || !strings.Contains(stderr, bad+`:3: column "user": unknown ID "user-99"`) {
		t.Errorf("unknown ID: exit %d, %s", code, stderr)
	}
	os.WriteFile(bad, []byte("user,item,time\nuser-01,item A0,2022-01-01\n"), 0o644)
	code, _, stderr = runCLI("predict", "-model", m, "-input", bad, "-index", "user,item,time")
	if code != exitFailure || !strings.Contains(stderr, bad+`:2: column "time": time 2022-01-01T00:00:00Z falls in the bin starting 2022-01-01T00:00:00Z, outside the model's`) {
		t.Errorf("time outside: exit %d, %s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-index", "user,item"}, "-index names 2 columns, the model has 3 modes (user,item,time:day)"},
		{[]string{"-index", "user,item,time:hour"}, "bins of hour, the model's mode 3 (time) has bins of day"},
		{[]string{"-index", "user,item:day,time"}, "binned by day, but the model's mode 2 (item) holds IDs"},
		{[]string{"-value", "rating"}, "-value names a column of a table: give -index too"},
		{[]string{"-index", "user,item,time", "-index-base", "1"}, "-index-base is for cells of indices"},
	} {
		code, _, stderr = runCLI(append([]string{"predict", "-model", m, "-input", bad}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
	plain := filepath.Join(dir, "plain")
	code, _, stderr = runCLI(append([]string{"augment", "-backend", "cpu", "-input", "testdata/golden/input.tsv", "-model-out", plain}, tiny...)...)
	if code != exitOK {
		t.Fatal(stderr)
	}
	code, _, stderr = runCLI("predict", "-model", plain, "-input", bad, "-index", "user,item,time")
	if code != exitUsage || !strings.Contains(stderr, "has no dictionaries.json (it was trained on a tensor of indices") {
		t.Errorf("tensor model: exit %d, %s", code, stderr)
	}

	// convert: the table to DAIN TSV (-ids sorted) is the hand-made
	// tensor, with the dictionaries beside it; a CSV → Parquet copy
	// reads back as the same cells.
	conv, dict := filepath.Join(dir, "conv.tsv"), filepath.Join(dir, "dict.json")
	code, _, stderr = runCLI("convert", "-input", csvPath, "-index", "user,item,time:day", "-value", "rating", "-ids", "sorted", "-output", conv, "-dict-out", dict, "-quiet")
	if b, _ := os.ReadFile(conv); code != exitOK || string(b) != s.tsv {
		t.Errorf("convert: exit %d %s; equal to the hand-made TSV: %v", code, stderr, string(b) == s.tsv)
	}
	if b, err := os.ReadFile(dict); err != nil || !strings.Contains(string(b), `"column": "time", "kind": "time", "size": 20, "bin": "day", "bin_seconds": 86400, "first_bin": 18687, "origin": "2021-03-01T00:00:00Z"`) {
		t.Errorf("dictionaries: %v\n%s", err, b)
	}
	copyPQ := filepath.Join(dir, "copy.parquet")
	code, _, stderr = runCLI("convert", "-input", csvPath, "-index", "user,item,time", "-value", "rating", "-output", copyPQ, "-quiet")
	if code != exitOK {
		t.Fatalf("convert to Parquet: exit %d: %s", code, stderr)
	}
	conv2 := filepath.Join(dir, "conv2.tsv")
	code, _, stderr = runCLI("convert", "-input", copyPQ, "-index", "user,item,time:day", "-value", "rating", "-ids", "sorted", "-output", conv2, "-quiet")
	if b, _ := os.ReadFile(conv2); code != exitOK || string(b) != s.tsv {
		t.Errorf("convert of the Parquet copy: exit %d %s", code, stderr)
	}
}

// TestTableBadInput: bad rows are exit 1 naming file:line and column;
// table flags that do not fit are exit 2.
func TestTableBadInput(t *testing.T) {
	dir := t.TempDir()
	w := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	good := w("good.csv", "u,i,t,v\na,b,2020-01-01,1\n")
	idx := []string{"-index", "u,i,t:day", "-value", "v"}
	for _, c := range []struct {
		file, body string
		want       string
	}{
		{"nocol.csv", "u,i,v\na,b,1\n", `nocol.csv:1: no column "t" (-index); the header has "u", "i", "v"`},
		{"fields.csv", "u,i,t,v\na,b,2020-01-01,1\na,b,2020-01-01\n", "fields.csv:3: 3 fields, the header has 4 columns"},
		{"value.csv", "u,i,t,v\na,b,2020-01-01,1\na,c,2020-01-01,x\n", `value.csv:3: column "v": value "x" is not a number`},
		{"time.csv", "u,i,t,v\na,b,01/02/2020,1\n", `time.csv:2: column "t": "01/02/2020" is not a time`},
		{"dup.csv", "u,i,t,v\na,b,2020-01-01T10:00:00Z,1\nb,b,2020-01-01,1\na,b,2020-01-01T11:00:00Z,1\n", `dup.csv:4: duplicate cell (u="a", i="b", t="2020-01-01T00:00:00Z"), first on line 2`},
		{"empty.csv", "u,i,t,v\na,,2020-01-01,1\n", `empty.csv:2: column "i": empty ID`},
	} {
		p := w(c.file, c.body)
		code, _, stderr := runCLI(append(append([]string{"augment", "-backend", "cpu", "-input", p}, idx...), tiny...)...)
		if code != exitFailure || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want exit 1 and %q", c.file, code, stderr, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-input", good, "-index", "u,i,t:fortnight", "-value", "v"}, `-index "u,i,t:fortnight": column "t": time bin "fortnight"`},
		{[]string{"-input", good, "-index", "u,i,t"}, "-index needs -value COL"},
		{[]string{"-input", good, "-value", "v"}, "-value names a column of a table: give -index too"},
		{[]string{"-ids", "sorted"}, "-ids numbers the IDs of a table: give -index too"},
		{[]string{"-input", good}, "is a csv table: name its mode columns with -index"},
		{[]string{"-input", good, "-index", "u,i,u", "-value", "v"}, `column "u" named twice`},
		{[]string{"-input", good, "-index", "u,i,t", "-value", "t"}, `column "t" is both in -index and -value`},
		{[]string{"-input", good, "-index", "u,i,t", "-value", "v", "-ids", "random"}, `-ids "random": want first or sorted`},
		{[]string{"-input", good, "-index", "u,i,t", "-value", "v", "-index-base", "1"}, "-index-base is for tensors of indices"},
		{[]string{"-input", good, "-index", "u,i,t", "-value", "v", "-format", "tns"}, `-format "tns" with -index: want csv, tsv or parquet`},
		{[]string{"-input", good, "-index", "u,i,t", "-value", "v", "-dist", "mpi"}, "-dist mpi reads tensors of indices"},
	} {
		code, _, stderr := runCLI(append(append([]string{"augment", "-backend", "cpu"}, c.args...), tiny...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
	// A TSV table: by extension with -index, tab-separated with a header.
	tsv := w("t.tsv", "u\ti\tt\tv\na\tb\t1577836800\t1\nb\tb\t1577836800\t2\n")
	code, _, stderr := runCLI("convert", "-input", tsv, "-index", "u,i,t:day", "-value", "v", "-output", filepath.Join(dir, "t.tns"), "-quiet")
	if b, _ := os.ReadFile(filepath.Join(dir, "t.tns")); code != exitOK || string(b) != "1 1 1 1\n2 1 1 2\n" {
		t.Errorf("TSV table: exit %d %s: %q", code, stderr, b)
	}
	// Help names the table flags in every command that reads a table.
	for _, cmd := range []string{"augment", "convert", "predict", "eval"} {
		_, _, stderr := runCLI(cmd, "-h")
		for _, f := range []string{"-index", "-value"} {
			if !strings.Contains(stderr, "  "+f+" ") {
				t.Errorf("%s -h lacks %s", cmd, f)
			}
		}
	}
}
