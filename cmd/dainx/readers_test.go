package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// limitedRun runs the test binary as dainx with args in a child process
// whose address space is limited to limitMB MiB (ulimit -v), and returns
// its exit code, standard error and peak resident memory in MiB. A crash
// for memory shows as Go's "out of memory" (exit 2) or a signal (-1).
func limitedRun(t *testing.T, limitMB int, args ...string) (int, string, int64) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, limitMB<<10), os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), "DAINX_TEST_AS_DAINX=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss >> 10
	}
	return code, stderr.String(), rss
}

// oneLine checks that stderr is one line holding want.
func oneLine(t *testing.T, what, stderr, want string) {
	t.Helper()
	if !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || strings.Contains(stderr, "goroutine ") {
		t.Errorf("%s: stderr %q, want one line with %q", what, clipText(stderr), want)
	}
}

func clipText(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// dirNames lists dir's entries.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestManyFieldsLimited: a 12 MB tensor file of two lines of 3 million
// fields is refused on its first line, under a 2 GiB address space, by
// convert and augment (it asked for a 12 GB block and died "out of
// memory"); a -cells file of such lines likewise by predict. Exit 1, one
// line, nothing written.
func TestManyFieldsLimited(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("0 ", 3_000_000-1) + "1\n"
	in := filepath.Join(dir, "f.tsv")
	if err := os.WriteFile(in, []byte(line+line), 0o644); err != nil {
		t.Fatal(err)
	}
	want := in + ":1: 3000000 fields: a tensor has at most 1024 modes"
	for _, args := range [][]string{
		{"convert", "-input", in, "-output", filepath.Join(dir, "o.tns")},
		{"augment", "-input", in, "-backend", "cpu", "-output", filepath.Join(dir, "aug.tsv"), "-quiet"},
	} {
		code, stderr, _ := limitedRun(t, 2048, args...)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1: %s", args[0], code, clipText(stderr))
		}
		oneLine(t, args[0], stderr, want)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"f.tsv"}) {
		t.Errorf("left behind: %v", got)
	}
	// predict's -cells: the model's order bounds the fields.
	m := filepath.Join(dir, "m")
	if code, _, stderr := runCLI(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-model-out", m}, tiny...)...); code != 0 {
		t.Fatalf("augment -model-out: exit %d: %s", code, stderr)
	}
	code, stderr, _ := limitedRun(t, 2048, "predict", "-model", m, "-cells", in)
	if code != 1 {
		t.Errorf("predict: exit %d: %s", code, clipText(stderr))
	}
	oneLine(t, "predict", stderr, in+":1: want 3 indices, optionally a value, got 3000000 fields")
}

// TestTruncatedGzipNamed: a gzip tensor cut short is a truncated stream
// after its last whole line, not a short line, for convert, augment and
// predict's -cells.
func TestTruncatedGzipNamed(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&text, "%d\t%d\t%d\t%d.5\n", i%40, (i/40)%30, i/1200, 1+i%5)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(text.String()))
	zw.Close()
	in := filepath.Join(dir, "tr.tsv.gz")
	os.WriteFile(in, z.Bytes()[:z.Len()*2/3], 0o644)
	want := in + ": truncated gzip stream (unexpected EOF) after line "
	for _, args := range [][]string{
		{"convert", "-input", in, "-output", filepath.Join(dir, "o.tns")},
		{"augment", "-input", in, "-backend", "cpu", "-quiet"},
	} {
		code, _, stderr := runCLI(args...)
		if code != 1 {
			t.Errorf("%s: exit %d", args[0], code)
		}
		oneLine(t, args[0], stderr, want)
	}
	m := filepath.Join(dir, "m")
	if code, _, stderr := runCLI(append([]string{"augment", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-model-out", m}, tiny...)...); code != 0 {
		t.Fatalf("augment -model-out: exit %d: %s", code, stderr)
	}
	var cells strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&cells, "%d\t%d\t%d\n", i%3, i%4, i%5)
	}
	z.Reset()
	zw = gzip.NewWriter(&z)
	zw.Write([]byte(cells.String()))
	zw.Close()
	q := filepath.Join(dir, "q.tsv.gz")
	os.WriteFile(q, z.Bytes()[:z.Len()/2], 0o644)
	code, _, stderr := runCLI("predict", "-model", m, "-cells", q)
	if code != 1 {
		t.Errorf("predict: exit %d", code)
	}
	oneLine(t, "predict", stderr, q+": truncated gzip stream (unexpected EOF) after line ")
}

// tableModel trains a model on a small table of user, item and day
// (-index user,item,time:day) into dir/m and returns it and the table.
func tableModel(t *testing.T, dir string) (string, string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("user,item,time,rating\n")
	for k := range 400 {
		u, i, d := (k*7)%23, (k*11)%17, (k*5)%9
		fmt.Fprintf(&b, "%d,%d,2021-03-%02dT10:00:00Z,%d\n", u, i, d+1, 1+(u+i)%5)
	}
	in := filepath.Join(dir, "old.csv")
	os.WriteFile(in, []byte(b.String()), 0o644)
	m := filepath.Join(dir, "m")
	if code, _, stderr := runCLI(append([]string{"augment", "-input", in, "-index", "user,item,time:day", "-value", "rating", "-backend", "cpu", "-model-out", m}, tiny...)...); code != 0 {
		t.Fatalf("augment: exit %d: %s", code, stderr)
	}
	return m, in
}

// TestFoldInColumnsMatched: fold-in and predict match the cells' -index
// with the model's dictionaries by column name, in one check: item IDs
// given as users (-index item,user,time on a model of user,item,time)
// were taken as new users by fold-in; now both refuse the swap naming
// the columns (exit 2), as they refuse a column the model lacks, and
// nothing is written.
func TestFoldInColumnsMatched(t *testing.T) {
	dir := t.TempDir()
	m, in := tableModel(t, dir)
	out := filepath.Join(dir, "m2")
	swap := `-index "item,user,time": the model's columns in another order ("item" is the model's mode 2, not 1; "user" is the model's mode 1, not 2): give them as the model's modes, user,item,time:day`
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fold-in", "-model", m, "-input", in, "-index", "item,user,time", "-value", "rating", "-model-out", out, "-backend", "cpu", "-quiet"}, swap},
		{[]string{"predict", "-model", m, "-input", in, "-index", "item,user,time", "-value", "rating"}, swap},
		{[]string{"fold-in", "-model", m, "-input", in, "-index", "user,rating,time", "-value", "item", "-model-out", out, "-backend", "cpu", "-quiet"}, `column "rating" (mode 2) is not one of the model's: its modes are the columns user,item,time:day, in that order`},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		if code != 2 || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q", tc.args[0], code, stdout)
		}
		oneLine(t, strings.Join(tc.args, " "), stderr, tc.want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("-model-out written: %v", err)
	}
}

// TestHostileDictionaries: a dictionaries.json of 3 million IDs beside
// a model whose user mode has 23 is refused naming the file and the mode
// after 24 IDs, in little memory (it was decoded whole first: 2.8 GB and
// 22 s for 30 million IDs), by fold-in and predict alike.
func TestHostileDictionaries(t *testing.T) {
	dir := t.TempDir()
	m, in := tableModel(t, dir)
	js, err := os.ReadFile(filepath.Join(m, "dictionaries.json"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(js, []byte(`"ids": [`))
	if i < 0 {
		t.Fatalf("no ids in %s", js)
	}
	// A model directory whose dictionaries.json has n more IDs in the
	// user mode.
	withIDs := func(name string, n int) (string, []byte) {
		var ids bytes.Buffer
		for k := range n {
			ids.WriteString(strconv.Itoa(k))
			ids.WriteByte(',')
		}
		hostile := slices.Concat(js[:i+len(`"ids": [`)], ids.Bytes(), js[i+len(`"ids": [`):])
		h := filepath.Join(dir, name)
		os.Mkdir(h, 0o755)
		for _, name := range []string{"model.json", "model.safetensors"} {
			b, _ := os.ReadFile(filepath.Join(m, name))
			os.WriteFile(filepath.Join(h, name), b, 0o644)
		}
		os.WriteFile(filepath.Join(h, "dictionaries.json"), hostile, 0o644)
		return h, hostile
	}
	h, hostile := withIDs("hostile", 3_000_000)
	one, _ := withIDs("one-more", 1)
	dp := filepath.Join(h, "dictionaries.json")
	want := "dictionaries " + dp + ": modes[0].ids: more than 23 IDs, the model's mode 1 has 23 entities"
	for _, args := range [][]string{
		{"fold-in", "-model", h, "-input", in, "-index", "user,item,time", "-value", "rating", "-model-out", filepath.Join(dir, "m2"), "-backend", "cpu", "-quiet"},
		{"predict", "-model", h, "-input", in, "-index", "user,item,time"},
	} {
		code, stderr, rss := limitedRun(t, 2048, args...)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1", args[0], code)
		}
		oneLine(t, args[0], stderr, want)
		// The same refusal of a file with one ID too many is the
		// baseline (the process itself): counting as it reads adds
		// little to it, where decoding the file whole added hundreds of
		// MiB.
		base := slices.Clone(args)
		base[2] = one
		_, _, rssBase := limitedRun(t, 2048, base...)
		if rss > rssBase+40 {
			t.Errorf("%s: peak RSS %d MiB to refuse a 24 MB file, %d MiB for a file with one ID too many", args[0], rss, rssBase)
		}
	}
	if got, _ := os.ReadFile(dp); !bytes.Equal(got, hostile) {
		t.Error("the dictionaries changed")
	}
}

// TestParquetUint64IDs: a Parquet UINT64 ID above 2⁶³−1 is kept as it is
// through convert (it was -1 in the dictionaries and every output).
func TestParquetUint64IDs(t *testing.T) {
	type row struct {
		U uint64  `parquet:"u"`
		I uint32  `parquet:"i"`
		R float64 `parquet:"r"`
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "ids.parquet")
	if err := parquet.WriteFile(in, []row{{1, 1, 1}, {math.MaxUint64, 4_000_000_000, 2}, {1 << 63, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	out, dict := filepath.Join(dir, "o.csv"), filepath.Join(dir, "d.json")
	if code, _, stderr := runCLI("convert", "-input", in, "-index", "u,i", "-value", "r", "-output", out, "-dict-out", dict, "-quiet"); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	o, _ := os.ReadFile(out)
	d, _ := os.ReadFile(dict)
	for _, s := range []string{"18446744073709551615,4000000000,2", "9223372036854775808,2,3"} {
		if !strings.Contains(string(o), s) {
			t.Errorf("%s lacks %q:\n%s", out, s, o)
		}
	}
	if !strings.Contains(string(d), `"18446744073709551615"`) || strings.Contains(string(d), "-1") {
		t.Errorf("dictionaries:\n%s", d)
	}
}
