//go:build unix

package tensor

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestAtomicWriteSpecialFile: a path that exists and is not a regular file
// (here a named pipe; /dev/null in use) receives the bytes in place and
// stays what it was, instead of being replaced by a renamed temporary file.
func TestAtomicWriteSpecialFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	if err := AtomicWrite(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "1\t2\t3.5\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if string(b) != "1\t2\t3.5\n" {
			t.Errorf("the pipe's reader got %q", b)
		}
	case <-time.After(5 * time.Second):
		t.Error("nothing was written to the named pipe in 5 s")
	}
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the named pipe was replaced: %v, %v", st.Mode(), err)
	}
}
