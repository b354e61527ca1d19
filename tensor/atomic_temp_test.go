//go:build linux

package tensor

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dainx/dainx/internal/outtx"
)

// TestAtomicWriteFullDisk: on a full disk AtomicWrite's error names the
// path, never its temporary, and nothing is left behind (a small tmpfs;
// skipped where it cannot be mounted).
func TestAtomicWriteFullDisk(t *testing.T) {
	d := t.TempDir()
	if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("no tmpfs: %v", err)
	}
	defer syscall.Unmount(d, 0)
	path := filepath.Join(d, "model.safetensors")
	err := AtomicWrite(path, func(w io.Writer) error {
		_, err := w.Write(make([]byte, 1<<20))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "no space left on device") || strings.Contains(err.Error(), "dainx-tmp") {
		t.Fatalf("error %v: want one naming %s and the full disk, not a temporary", err, path)
	}
	if es, _ := os.ReadDir(d); len(es) != 0 {
		t.Fatalf("left %v", es)
	}
}

// TestAtomicWriteSweeps: AtomicWrite stages under a name carrying this
// process's PID and first removes the temporaries of path whose owner is
// gone.
func TestAtomicWriteSweeps(t *testing.T) {
	d := t.TempDir()
	path := filepath.Join(d, "x.json")
	c := exec0(t)
	_, host := outtx.Owner()
	stale := outtx.TempNameFor(d, "x.json", c, host, 1)
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	var during []string
	err := AtomicWrite(path, func(w io.Writer) error {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			during = append(during, e.Name())
		}
		_, err := io.WriteString(w, "{}")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || !strings.HasPrefix(during[0], ".x.json.dainx-tmp-") || !outtx.IsTemp(during[0]) {
		t.Errorf("staged beside %v, want one temporary named after x.json", during)
	}
	if es, _ := os.ReadDir(d); len(es) != 1 || es[0].Name() != "x.json" {
		t.Errorf("left %v", es)
	}
}

// exec0 returns the PID of a process that has ended.
func exec0(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skip(err)
	}
	p.Wait()
	return p.Pid
}
