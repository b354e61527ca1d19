package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/tensor"
)

func TestConvertEveryFormat(t *testing.T) {
	dir := t.TempDir()
	src := writeTSV(t, dir, "x.tsv", 700)
	want, err := tensor.ReadFile(src, tensor.ReadOptions{Format: tensor.TSV, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a.tsv", "a.tsv.gz", "a.tns", "a.tns.gz", "a.bin", "a.bin.gz"}
	for _, from := range names {
		in := filepath.Join(dir, "from-"+from)
		if code, _, stderr := runCLI("convert", "-quiet", "-input", src, "-output", in); code != exitOK {
			t.Fatalf("%s: exit %d: %s", from, code, stderr)
		}
		for _, to := range names {
			out := filepath.Join(dir, "to-"+to)
			code, stdout, stderr := runCLI("convert", "-input", in, "-output", out)
			if code != exitOK {
				t.Fatalf("%s → %s: exit %d: %s", from, to, code, stderr)
			}
			if !strings.Contains(stdout, "700 cells") || stderr != "" {
				t.Errorf("%s → %s: stdout %q, stderr %q", from, to, stdout, stderr)
			}
			got, err := tensor.ReadFile(out, tensor.ReadOptions{Format: tensor.FormatOf(out), IndexBase: -1})
			if err != nil {
				t.Fatal(err)
			}
			if !equalCOO(got, want) {
				t.Errorf("%s → %s: tensor changed", from, to)
			}
		}
	}
	// The text files are what the formats say: tns 1-based with spaces.
	tns, _ := os.ReadFile(filepath.Join(dir, "to-a.tns"))
	if first := strings.SplitN(string(tns), "\n", 2)[0]; first != "1 1 1 1.5" {
		t.Errorf("first .tns line %q", first)
	}
	bin, _ := os.ReadFile(filepath.Join(dir, "to-a.bin"))
	if len(bin) < 20 || binary.LittleEndian.Uint32(bin) != 0 || binary.LittleEndian.Uint64(bin[4:]) != 4 || binary.LittleEndian.Uint64(bin[12:]) != 4 {
		t.Errorf(".bin header % x", bin[:min(20, len(bin))])
	}
}

func equalCOO(a, b *tensor.COO) bool {
	if len(a.Dims) != len(b.Dims) || len(a.Val) != len(b.Val) {
		return false
	}
	for i := range a.Dims {
		if a.Dims[i] != b.Dims[i] {
			return false
		}
	}
	for i := range a.Idx {
		if a.Idx[i] != b.Idx[i] {
			return false
		}
	}
	for i := range a.Val {
		if a.Val[i] != b.Val[i] {
			return false
		}
	}
	return true
}

func TestConvertBasesAndFormats(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.dat")
	os.WriteFile(in, []byte("# 1-based, spaces\n3 1 2.5\n1 2 -1\n"), 0o644)
	out := filepath.Join(dir, "out.txt")
	// Explicit formats override the extensions; bases are converted.
	code, _, stderr := runCLI("convert", "-quiet", "-input", in, "-format", "tns", "-output", out, "-output-format", "tsv", "-output-index-base", "5")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "7\t5\t2.5\n5\t6\t-1\n" {
		t.Errorf("got %q", b)
	}
	// -index-base reads it back.
	out2 := filepath.Join(dir, "out2.bin")
	if code, _, stderr := runCLI("convert", "-quiet", "-input", out, "-index-base", "5", "-output", out2, "-output-index-base", "1"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c, err := tensor.ReadFile(out2, tensor.ReadOptions{Format: tensor.BIN, IndexBase: 1})
	if err != nil || c.NNZ() != 2 || c.Idx[0] != 2 || c.Idx[1] != 0 {
		t.Errorf("%+v %v", c, err)
	}
	// A .bin whose sizes exceed its indices: the note on standard error.
	big := &tensor.COO{Dims: []int{10, 10}, Idx: []int32{1, 2}, Val: []float64{1}}
	binIn := filepath.Join(dir, "big.bin")
	if err := tensor.WriteFile(binIn, big, tensor.WriteOptions{Format: tensor.BIN, IndexBase: -1}); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("convert", "-quiet", "-input", binIn, "-output", filepath.Join(dir, "big.tsv"))
	if code != exitOK || !strings.Contains(stderr, "text does not store the mode sizes [10 10]") || !strings.Contains(stderr, "[2 3]") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeTSV(t, dir, "good.tsv", 10)
	bad := filepath.Join(dir, "bad.tsv")
	os.WriteFile(bad, []byte("1\t2\t3\t4.0\n1\t2\t3.5\t1.0\n"), 0o644)
	notBin := filepath.Join(dir, "text.bin")
	os.WriteFile(notBin, []byte("1 2 3 4.0\n"), 0o644)
	out := filepath.Join(dir, "out.tsv")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-output", out}, exitUsage, "-input FILE and -output FILE are required"},
		{[]string{"-input", good}, exitUsage, "are required"},
		{[]string{"-input", good, "-output", out, "-format", "csv"}, exitUsage, "-format: tensor: unknown format \"csv\" (want tsv, tns or bin)"},
		{[]string{"-input", good, "-output", out, "-output-format", "x"}, exitUsage, "-output-format"},
		{[]string{"-input", good, "-output", out, "-index-base", "-2"}, exitUsage, "-index-base -2"},
		{[]string{"-input", good, "-output", out, "-output-index-base", "-5"}, exitUsage, "-output-index-base -5"},
		{[]string{"-input", good, "-output", out, "extra"}, exitUsage, "unexpected argument"},
		{[]string{"-input", bad, "-output", out}, exitFailure, "bad.tsv:2: index 3 (mode 3): \"3.5\" is not an integer"},
		{[]string{"-input", notBin, "-output", out}, exitFailure, "not a SPLATT binary coordinate file"},
		{[]string{"-input", filepath.Join(dir, "missing.tsv"), "-output", out}, exitFailure, "missing.tsv"},
		{[]string{"-input", good, "-output", filepath.Join(dir, "no", "dir.tsv")}, exitFailure, "does not exist"},
	} {
		code, _, stderr := runCLI(append([]string{"convert"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed convert left %s", out)
	}
	code, _, stderr := runCLI("convert", "-h")
	if code != exitOK {
		t.Errorf("-h: exit %d", code)
	}
	for _, f := range []string{"-input", "-output", "-format", "-output-format", "-index-base", "-output-index-base", "-quiet", "SPLATT", "little-endian"} {
		if !strings.Contains(stderr, f) {
			t.Errorf("-h does not mention %s", f)
		}
	}
	if code, stdout, _ := runCLI("help"); code != exitOK || !strings.Contains(stdout, "dainx convert") {
		t.Errorf("help does not list convert")
	}
}
