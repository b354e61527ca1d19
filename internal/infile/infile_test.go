package infile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestOpen: a regular file opens with its size under both; a directory
// opens under Open and is refused by OpenRegular with ErrNotRegular; a
// missing path gives os.Open's error under both.
func TestOpen(t *testing.T) {
	w, err := os.CreateTemp(t.TempDir(), "regular")
	if _, err2 := w.WriteString("12345"); err != nil || err2 != nil || w.Close() != nil {
		t.Fatal("writing the regular file")
	}
	dir := filepath.Dir(w.Name())
	for _, open := range []func(string) (*os.File, fs.FileInfo, error){Open, OpenRegular} {
		if f, st, err := open(w.Name()); err != nil || st.Size() != 5 {
			t.Fatalf("regular file: %v, %v", st, err)
		} else {
			f.Close()
		}
		if _, _, err := open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing file: %v", err)
		}
	}
	if f, st, err := Open(dir); err != nil || !st.IsDir() {
		t.Fatalf("Open(dir): %v, %v", st, err)
	} else {
		f.Close()
	}
	if f, st, err := OpenRegular(dir); err != ErrNotRegular || f != nil || st != nil || err.Error() != "not a regular file" {
		t.Errorf("OpenRegular(dir): %v, %v, %v", f, st, err)
	}
}
