package outtx

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadPID returns the PID of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skip(err)
	}
	return c.Process.Pid
}

// A staged output's temporary names the output and this process.
func TestTempNameCarriesPID(t *testing.T) {
	d := t.TempDir()
	tx := New()
	f, err := tx.File(filepath.Join(d, "a.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	f.Write(func(w io.Writer) error { seen = names(t, d); return nil })
	want := fmt.Sprintf(".a.tsv.dainx-tmp-%d-", os.Getpid())
	if len(seen) != 1 || !strings.HasPrefix(seen[0], want) {
		t.Fatalf("staged as %v, want one name starting %s", seen, want)
	}
	if Stale(seen[0]) {
		t.Fatalf("%s is stale while its owner runs", seen[0])
	}
	tx.Abort()
}

// The temporaries of an output whose owner is gone are removed when the
// output is registered again; those of a running owner are not; a
// replaced file kept by a Commit that was killed between its renames is
// put back.
func TestStaleTemporariesSwept(t *testing.T) {
	d := t.TempDir()
	dead := deadPID(t)
	_, host := Owner()
	stale := []string{
		TempNameFor(d, "a.tsv", dead, host, 1),
		TempNameFor(d, "m", dead, host, 2), // a staged directory
		filepath.Join(d, fmt.Sprintf("%s%d-%08x-%016x", probeTag, dead, host, 3)),
	}
	for _, p := range stale[:1] {
		write(t, p, "half")
	}
	if err := os.Mkdir(stale[1], 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(stale[1], "model.json"), "half")
	write(t, stale[2], "")
	live := TempNameFor(d, "a.tsv", os.Getppid(), host, 4)
	write(t, live, "another run's")
	other := TempNameFor(d, "b.tsv", dead, host, 5) // not this command's output
	write(t, other, "half")
	foreign := TempNameFor(d, "a.tsv", dead, host^1, 6) // another machine's
	write(t, foreign, "half")
	// A Commit killed after it renamed c.tsv aside.
	old := filepath.Join(d, fmt.Sprintf(".c.tsv%s%d-%08x-%016x", oldTag, dead, host, 7))
	write(t, old, "the old c")

	tx := New()
	for _, o := range []string{"a.tsv", "c.tsv"} {
		if _, err := tx.File(filepath.Join(d, o)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Dir(filepath.Join(d, "m"), nil); err != nil {
		t.Fatal(err)
	}
	got := names(t, d)
	for _, p := range append(stale, old) {
		if slices.Contains(got, filepath.Base(p)) {
			t.Errorf("%s is still there", filepath.Base(p))
		}
	}
	for _, p := range []string{live, other, foreign} {
		if !slices.Contains(got, filepath.Base(p)) {
			t.Errorf("%s was removed", filepath.Base(p))
		}
	}
	if s := read(t, filepath.Join(d, "c.tsv")); s != "the old c" {
		t.Errorf("c.tsv holds %q, want the file the killed Commit replaced", s)
	}
	// A whole directory set aside (Python's save) comes back too.
	aside := filepath.Join(d, fmt.Sprintf(".py%s%d-%08x-%016x", oldTag, dead, host, 8))
	os.Mkdir(aside, 0o755)
	write(t, filepath.Join(aside, "model.json"), "old")
	Sweep(d, "py")
	if s := read(t, filepath.Join(d, "py", "model.json")); s != "old" {
		t.Errorf("the directory set aside was not put back: %q", s)
	}
}

// TestHelperKilledWriter is not a test: run as a child with
// OUTTX_TEST_KILL=PATH it stages PATH (and DIR output PATH.d), says
// "staged" and waits to be killed.
func TestHelperKilledWriter(t *testing.T) {
	path := os.Getenv("OUTTX_TEST_KILL")
	if path == "" {
		t.Skip("a helper process")
	}
	tx := New()
	f, err := tx.File(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	md, err := tx.Dir(path+".d", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := md.Path()
	os.WriteFile(filepath.Join(p, "x"), []byte("x"), 0o644)
	f.Write(func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("half ", 1000))
		fmt.Println("staged")
		time.Sleep(time.Minute)
		return nil
	})
}

// A command killed (SIGKILL) while it writes its outputs leaves its
// temporaries; the next command writing the same outputs removes them
// and leaves nothing but its outputs.
func TestKilledWriterLeavesNothing(t *testing.T) {
	d := t.TempDir()
	out := filepath.Join(d, "a.tsv")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperKilledWriter$")
	cmd.Env = append(os.Environ(), "OUTTX_TEST_KILL="+out)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if strings.TrimSpace(line) != "staged" {
		t.Fatalf("helper: %q", line)
	}
	if n := names(t, d); len(n) != 2 {
		t.Fatalf("the killed writer left %v, want its two temporaries", n)
	}
	tx := New()
	f, err := tx.File(out)
	if err != nil {
		t.Fatal(err)
	}
	md, err := tx.Dir(out+".d", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(text("whole"))
	p, _ := md.Path()
	write(t, filepath.Join(p, "x"), "x")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := names(t, d); !slices.Equal(n, []string{"a.tsv", "a.tsv.d"}) {
		t.Fatalf("after the next run: %v", n)
	}
}

// TestHelperPipe is not a test: with OUTTX_TEST_PIPE=PATH it writes
// "through PATH" to the output PATH and commits.
func TestHelperPipe(t *testing.T) {
	path := os.Getenv("OUTTX_TEST_PIPE")
	if path == "" {
		t.Skip("a helper process")
	}
	tx := New()
	f, err := tx.File(path)
	if err == nil {
		err = f.Write(text("through " + path + "\n"))
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// /dev/stdout and /dev/stderr into a pipe, and a named pipe, are written
// in place: no temporary, no probe of /proc/PID/fd.
func TestPipesWrittenInPlace(t *testing.T) {
	for _, p := range []string{"/dev/stdout", "/dev/stderr"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperPipe$")
		cmd.Env = append(os.Environ(), "OUTTX_TEST_PIPE="+p)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if p == "/dev/stderr" {
			cmd.Stdout, cmd.Stderr = &errb, &out
		}
		if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "through "+p) {
			t.Errorf("%s into a pipe: %v; wrote %q; said %q", p, err, out.String(), errb.String())
		}
	}
	d := t.TempDir()
	fifo := filepath.Join(d, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	tx := New()
	f, err := tx.File(fifo)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(text("cells\n")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "cells\n" {
		t.Fatalf("the named pipe carried %q", s)
	}
	if n := names(t, d); !slices.Equal(n, []string{"fifo"}) {
		t.Fatalf("left %v", n)
	}
	// Two outputs on a terminal or /dev/null are not one file's clash.
	tx = New()
	if _, err := tx.File(os.DevNull); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.File(os.DevNull); err != nil {
		t.Fatalf("a second output on /dev/null: %v", err)
	}
}

// Symbolic links that cannot be followed are named as such: a loop, and
// a dangling link whose target's directory does not exist (the link and
// the target named).
func TestBadLinks(t *testing.T) {
	d := t.TempDir()
	a, b := filepath.Join(d, "a"), filepath.Join(d, "b")
	os.Symlink(b, a)
	os.Symlink(a, b)
	tx := New()
	_, err := tx.File(a)
	mustErr(t, err, "cannot write "+a, "too many levels of symbolic links")
	tx = New()
	err = tx.InputDir(a)
	mustErr(t, err, "cannot read "+a, "too many levels of symbolic links")
	_, err = tx.File(filepath.Join(d, "out.tsv"))
	mustErr(t, err, "too many levels of symbolic links")

	link := filepath.Join(d, "out.tsv")
	os.Symlink("missing/x.tsv", link)
	tx = New()
	_, err = tx.File(link)
	mustErr(t, err, "cannot write "+link, "symbolic link to missing/x.tsv", filepath.Join(d, "missing")+" does not exist")
	if strings.Contains(err.Error(), "directory . ") {
		t.Fatalf("names the working directory: %v", err)
	}
}

// An output that is an input under another name (a hard link) is refused,
// whatever the order of registration: a file of an input directory, a
// file of a directory output, an input registered after the output.
func TestHardLinksToInputs(t *testing.T) {
	d := t.TempDir()
	model := filepath.Join(d, "model")
	os.Mkdir(model, 0o755)
	write(t, filepath.Join(model, "model.json"), "{}")
	out := filepath.Join(d, "pred.tsv")
	if err := os.Link(filepath.Join(model, "model.json"), out); err != nil {
		t.Skip(err)
	}
	tx := New()
	tx.InputDir(model)
	_, err := tx.File(out)
	mustErr(t, err, "cannot write "+out, filepath.Join(model, "model.json"), "hard link")

	in := filepath.Join(d, "in.tsv")
	write(t, in, "0\t0\t1\n")
	split := filepath.Join(d, "split")
	os.Mkdir(split, 0o755)
	os.Link(in, filepath.Join(split, "train.tsv"))
	tx = New()
	tx.Input(in)
	_, err = tx.Dir(split, func(n string) bool { return n == "train.tsv" })
	mustErr(t, err, "cannot write "+split, "train.tsv", "is the input "+in, "hard link")

	rep := filepath.Join(d, "rep.json")
	os.Link(in, rep)
	tx = New()
	if _, err := tx.File(rep); err != nil {
		t.Fatal(err)
	}
	err = tx.Input(in)
	mustErr(t, err, "cannot write "+rep, "is the input "+in)
	if err := tx.Commit(); err == nil {
		t.Fatal("committed an output that is an input")
	}
	if read(t, in) != "0\t0\t1\n" {
		t.Fatal("the input changed")
	}
}

// A file output among a directory output's files names the file.
func TestFileInsideDirOutput(t *testing.T) {
	d := t.TempDir()
	m := filepath.Join(d, "m")
	tx := New()
	if _, err := tx.Dir(m, func(n string) bool { return n == "model.json" }); err != nil {
		t.Fatal(err)
	}
	imp := filepath.Join(m, "model.json")
	_, err := tx.File(imp)
	mustErr(t, err, "cannot write "+imp, "model.json", "output directory "+m)
}

// On a full disk the error names the output as given, never a
// temporary, and nothing is left behind. It needs a small tmpfs (root).
func TestFullDisk(t *testing.T) {
	d := t.TempDir()
	if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("no tmpfs: %v", err)
	}
	defer syscall.Unmount(d, 0)
	out := filepath.Join(d, "big.tsv")
	tx := New()
	f, err := tx.File(out)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Write(text(strings.Repeat("0\t0\t1\n", 100000)))
	mustErr(t, err, "cannot write "+out, "no space left on device")
	if strings.Contains(err.Error(), "dainx-tmp") {
		t.Fatalf("names the temporary: %v", err)
	}
	tx.Abort()
	if n := names(t, d); len(n) != 0 {
		t.Fatalf("left %v", n)
	}
}

// InsideDir names a file that a directory output yet to be made fills.
func TestInsideDir(t *testing.T) {
	d := t.TempDir()
	m, f := filepath.Join(d, "m"), filepath.Join(d, "m", "model.json")
	owns := func(n string) bool { return n == "model.json" }
	mustErr(t, InsideDir(f, m, owns), "cannot write "+f, "file model.json of the output directory "+m)
	if err := InsideDir(filepath.Join(m, "imp.tsv"), m, owns); err != nil {
		t.Fatal(err)
	}
}
