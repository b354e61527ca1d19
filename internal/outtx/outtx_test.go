package outtx

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func text(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// names lists dir, hidden temporaries included.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range es {
		ns = append(ns, e.Name())
	}
	return ns
}

func mustErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
}

func TestSameFileRefused(t *testing.T) {
	d := t.TempDir()
	in := filepath.Join(d, "in.tsv")
	write(t, in, "0\t0\t1\n")
	link := filepath.Join(d, "link.tsv")
	if err := os.Symlink("in.tsv", link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(d, "hard.tsv")
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, link, hard, filepath.Join(d, ".", "in.tsv")} {
		tx := New()
		tx.Input(in)
		_, err := tx.File(out)
		mustErr(t, err, "cannot write "+out, "is the input "+in)
	}
	// Two outputs naming one file.
	tx := New()
	if _, err := tx.File(filepath.Join(d, "a.tsv")); err != nil {
		t.Fatal(err)
	}
	_, err := tx.Report(filepath.Join(d, "x", "..", "a.tsv"))
	mustErr(t, err, "is also the output")
	if got := read(t, in); got != "0\t0\t1\n" {
		t.Fatalf("input changed: %q", got)
	}
}

func TestModelDirInput(t *testing.T) {
	d := t.TempDir()
	m := filepath.Join(d, "m")
	os.Mkdir(m, 0o755)
	write(t, filepath.Join(m, "model.json"), "{}")
	write(t, filepath.Join(m, "model.safetensors"), "x")
	tx := New()
	tx.InputDir(m)
	_, err := tx.File(filepath.Join(m, "model.safetensors"))
	mustErr(t, err, "is a file of the input "+m)
	if _, err := tx.File(filepath.Join(m, "pred.tsv")); err != nil {
		t.Fatalf("a new file beside the model: %v", err)
	}
	// An output directory that would replace an input file.
	tx = New()
	tx.Input(filepath.Join(m, "model.json"))
	_, err = tx.Dir(m, func(n string) bool { return strings.HasPrefix(n, "model.") })
	mustErr(t, err, "holds the input")
}

func TestMissingDirectory(t *testing.T) {
	d := t.TempDir()
	_, err := New().File(filepath.Join(d, "no", "x.tsv"))
	mustErr(t, err, "directory "+filepath.Join(d, "no")+" does not exist")
	f := filepath.Join(d, "file")
	write(t, f, "")
	_, err = New().Dir(f, nil)
	mustErr(t, err, "not a directory")
	_, err = New().File(d)
	mustErr(t, err, "is a directory")
}

func TestCommitWritesAll(t *testing.T) {
	d := t.TempDir()
	old := filepath.Join(d, "out.tsv")
	write(t, old, "old")
	target := filepath.Join(d, "target.json")
	write(t, target, "old report")
	link := filepath.Join(d, "report.json")
	os.Symlink("target.json", link)

	tx := New()
	a, err := tx.File(old)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tx.Report(link)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Abort()
	if err := a.Write(text("new")); err != nil {
		t.Fatal(err)
	}
	if err := r.Write(text("new report")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, old); got != "old" {
		t.Fatalf("written before Commit: %q", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if read(t, old) != "new" || read(t, target) != "new report" {
		t.Fatalf("after Commit: %q, %q", read(t, old), read(t, target))
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink %s was replaced", link)
	}
	if ns := names(t, d); !slices.Equal(ns, []string{"out.tsv", "report.json", "target.json"}) {
		t.Fatalf("left in the directory: %v", ns)
	}
}

// A failure at Commit's second rename takes the first back and leaves no
// temporary: the old files are there, byte for byte, and a new one is not.
func TestCommitRollback(t *testing.T) {
	for _, failAt := range []string{"b.tsv", "report.json", "m"} {
		t.Run(failAt, func(t *testing.T) {
			d := t.TempDir()
			write(t, filepath.Join(d, "a.tsv"), "old a")
			m := filepath.Join(d, "m")
			os.Mkdir(m, 0o755)
			write(t, filepath.Join(m, "model.json"), "old model")
			write(t, filepath.Join(m, "predictor.json"), "old predictor")
			write(t, filepath.Join(m, "notes.txt"), "the user's")
			tx := New()
			a, _ := tx.File(filepath.Join(d, "a.tsv"))
			b, _ := tx.File(filepath.Join(d, "b.tsv"))
			md, err := tx.Dir(m, func(n string) bool { return strings.HasSuffix(n, ".json") })
			if err != nil {
				t.Fatal(err)
			}
			r, _ := tx.Report(filepath.Join(d, "report.json"))
			a.Write(text("new a"))
			b.Write(text("new b"))
			r.Write(text("report"))
			p, err := md.Path()
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(p, "model.json"), "new model")
			SetCommitHook(func(user string) error {
				if filepath.Base(user) == failAt {
					return errors.New("injected")
				}
				return nil
			})
			defer SetCommitHook(nil)
			err = tx.Commit()
			mustErr(t, err, "cannot write "+filepath.Join(d, failAt), "injected")
			tx.Abort()
			if ns := names(t, d); !slices.Equal(ns, []string{"a.tsv", "m"}) {
				t.Fatalf("left behind: %v", ns)
			}
			if read(t, filepath.Join(d, "a.tsv")) != "old a" || read(t, filepath.Join(m, "model.json")) != "old model" ||
				read(t, filepath.Join(m, "predictor.json")) != "old predictor" || read(t, filepath.Join(m, "notes.txt")) != "the user's" {
				t.Fatal("an old output was not restored")
			}
		})
	}
}

// A directory output ends with exactly this run's files of its names: an
// older run's predictor.json goes, the user's notes stay.
func TestDirReplacesOldRun(t *testing.T) {
	d := t.TempDir()
	m := filepath.Join(d, "m")
	os.Mkdir(m, 0o755)
	write(t, filepath.Join(m, "model.json"), "old")
	write(t, filepath.Join(m, "predictor.json"), "old")
	write(t, filepath.Join(m, "notes.txt"), "keep")
	tx := New()
	md, err := tx.Dir(m, func(n string) bool { return strings.HasSuffix(n, ".json") })
	if err != nil {
		t.Fatal(err)
	}
	p, _ := md.Path()
	write(t, filepath.Join(p, "model.json"), "new")
	write(t, filepath.Join(p, "theta.json"), "new")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if ns := names(t, m); !slices.Equal(ns, []string{"model.json", "notes.txt", "theta.json"}) {
		t.Fatalf("directory holds %v", ns)
	}
	if ns := names(t, d); !slices.Equal(ns, []string{"m"}) {
		t.Fatalf("left beside it: %v", ns)
	}
	// A new directory appears whole.
	tx = New()
	n := filepath.Join(d, "new")
	md, _ = tx.Dir(n, nil)
	p, _ = md.Path()
	write(t, filepath.Join(p, "train.tsv"), "x")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if ns := names(t, n); !slices.Equal(ns, []string{"train.tsv"}) {
		t.Fatalf("new directory holds %v", ns)
	}
}

// Abort removes everything staged, and a Tx never committed leaves
// nothing.
func TestAbort(t *testing.T) {
	d := t.TempDir()
	tx := New()
	f, _ := tx.File(filepath.Join(d, "a.tsv"))
	md, _ := tx.Dir(filepath.Join(d, "m"), nil)
	f.Write(text("x"))
	p, _ := md.Path()
	write(t, filepath.Join(p, "model.json"), "x")
	tx.Abort()
	if ns := names(t, d); len(ns) != 0 {
		t.Fatalf("left behind: %v", ns)
	}
}

// A device is written in place (it cannot be renamed over).
func TestSpecialFile(t *testing.T) {
	tx := New()
	f, err := tx.File(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(text("x")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode().IsRegular() {
		t.Fatal("/dev/null replaced")
	}
}

// A failing fill names the user's path, not the temporary's.
func TestWriteErrorNamesPath(t *testing.T) {
	d := t.TempDir()
	tx := New()
	out := filepath.Join(d, "a.tsv")
	f, _ := tx.File(out)
	err := f.Write(func(w io.Writer) error {
		return &os.PathError{Op: "write", Path: filepath.Join(d, ".a.tsv.tmp-123"), Err: errors.New("no space left on device")}
	})
	mustErr(t, err, "cannot write "+out+": no space left on device")
	if strings.Contains(err.Error(), "tmp-") {
		t.Fatalf("error names the temporary: %v", err)
	}
	if ns := names(t, d); len(ns) != 0 {
		t.Fatalf("left behind: %v", ns)
	}
}
