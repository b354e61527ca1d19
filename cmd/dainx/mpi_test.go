package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/mpi"
	"github.com/dainx/dainx/tensor"
)

// The tests of `dainx augment -dist mpi` run the test binary as dainx
// under mpiexec. They need MPI (apt-get install mpich) and run when
// DAINX_TEST_MPI=1 (make test-mpi); $DAINX_MPIEXEC is the launcher (default
// mpiexec.mpich, else mpiexec), e.g. "mpiexec.openmpi --oversubscribe".

func mpiLauncher(t *testing.T) []string {
	t.Helper()
	if os.Getenv("DAINX_TEST_MPI") != "1" {
		t.Skip("set DAINX_TEST_MPI=1 (make test-mpi) to run the MPI tests")
	}
	cmd := strings.Fields(os.Getenv("DAINX_MPIEXEC"))
	if len(cmd) == 0 {
		cmd = []string{"mpiexec"}
		if _, err := exec.LookPath("mpiexec.mpich"); err == nil {
			cmd = []string{"mpiexec.mpich"}
		}
	}
	if _, err := exec.LookPath(cmd[0]); err != nil {
		t.Fatalf("DAINX_TEST_MPI=1 but no %s: %v", cmd[0], err)
	}
	return cmd
}

// mpiRun runs the test binary as dainx on n ranks and returns its exit
// code and combined output.
func mpiRun(t *testing.T, l []string, n int, env []string, args ...string) (int, string) {
	t.Helper()
	full := append(append(append([]string(nil), l[1:]...), "-n", strconv.Itoa(n), os.Args[0]), args...)
	cmd := exec.Command(l[0], full...)
	cmd.Env = append(append(os.Environ(), "DAINX_TEST_AS_DAINX=1", "GOMAXPROCS=1",
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if code == 0 {
			code = -1
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String()
}

// distFlags make a run with every stage in a few seconds.
var distFlags = []string{"-backend", "cpu", "-quiet", "-seed", "3",
	"-layers", "24,16,8", "-epochs", "6", "-patience", "3", "-batch", "128", "-rank", "4", "-channels", "4", "-ratio", "0.4"}

// withComments writes the golden input with comment and blank lines spread
// through it, so that ranks' byte ranges start mid-file and line numbers
// differ from cell numbers.
func withComments(t *testing.T, dir string, edit func(lines []string) []string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/golden/input.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if i%250 == 7 {
			lines = append(lines, "# a comment", "")
		}
		lines = append(lines, l)
	}
	if edit != nil {
		lines = edit(lines)
	}
	p := filepath.Join(dir, "in.tns")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDistSameRun: on 1, 2 and 3 ranks the augmented cells are those of
// one process, and the RMSEs within 0.5% (bit-identical on one rank), with
// dense Adam and with sparse-adam (every rank applying SparseAdam to the
// union of the rows touched anywhere), with the keyed split (the default:
// every rank finding its own cells' parts and places in each epoch's
// order) and with the legacy one.
func TestDistSameRun(t *testing.T) {
	l := mpiLauncher(t)
	for _, opt := range []string{"adam", "sparse-adam"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			distSameRun(t, l, dir, withComments(t, dir, nil), "-index-base", "0", "-embedding-optimizer", opt)
		})
	}
	t.Run("legacy", func(t *testing.T) {
		dir := t.TempDir()
		distSameRun(t, l, dir, withComments(t, dir, nil), "-index-base", "0", "-split", "legacy")
	})
}

// distSameRun runs dainx augment on the input file in, with the flags
// extra, on one process and on 1, 2 and 3 ranks, writing into dir, and
// checks that the ranks give one process's run.
func distSameRun(t *testing.T, l []string, dir, in string, extra ...string) {
	t.Helper()
	args := append(append([]string{"augment", "-input", in}, distFlags...), extra...)
	var one bytes.Buffer
	if code := run(append(args, "-output", filepath.Join(dir, "one.tsv")), &one, os.Stderr); code != 0 {
		t.Fatalf("one process: exit %d", code)
	}
	var want dain.Report
	if err := json.Unmarshal(one.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	wantAug, err := tensor.ReadFile(filepath.Join(dir, "one.tsv"), tensor.ReadOptions{Format: tensor.TSV, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3} {
		out, rep := filepath.Join(dir, fmt.Sprintf("d%d.tsv", n)), filepath.Join(dir, fmt.Sprintf("d%d.json", n))
		code, msg := mpiRun(t, l, n, nil, append(args, "-dist", "mpi", "-output", out, "-report", rep)...)
		if code != 0 {
			t.Fatalf("-n %d: exit %d\n%s", n, code, msg)
		}
		b, err := os.ReadFile(rep)
		if err != nil {
			t.Fatal(err)
		}
		var got dain.Report
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Dist == nil || got.Dist.Ranks != n {
			t.Fatalf("-n %d: report's dist %+v", n, got.Dist)
		}
		if len(got.Dist.PerRank) != n || got.Dist.Slowest < 0 || got.Dist.Slowest >= n || got.Dist.SlowestBy < 1 {
			t.Errorf("-n %d: per-rank times %+v, slowest rank %d (%.2f× the mean)", n, got.Dist.PerRank, got.Dist.Slowest, got.Dist.SlowestBy)
		}
		for _, rs := range got.Dist.PerRank {
			if runtime.GOOS == "linux" && !(rs.PeakRSSMiB > 1) {
				t.Errorf("-n %d: rank %d's peak RSS %v MiB", n, rs.Rank, rs.PeakRSSMiB)
			}
			for _, st := range []string{"split", "train", "augment", "retrain"} {
				if c, w := rs.Compute[st], rs.Wait[st]; !(c >= 0 && w >= 0) || c+w > got.Seconds.Total+0.5 {
					t.Errorf("-n %d: rank %d, stage %s: compute %v, wait %v (run %.1fs)", n, rs.Rank, st, c, w, got.Seconds.Total)
				}
			}
		}
		if over := n > mpi.NodeCPUs(); got.Dist.Oversubscribed != over {
			t.Errorf("-n %d on %d CPUs: the report says oversubscribed %v", n, mpi.NodeCPUs(), got.Dist.Oversubscribed)
		}
		aug, err := tensor.ReadFile(out, tensor.ReadOptions{Format: tensor.TSV, IndexBase: -1})
		if err != nil {
			t.Fatal(err)
		}
		if !slicesEqual(aug.Idx, wantAug.Idx) {
			t.Errorf("-n %d: the augmented cells differ from one process's", n)
		}
		for _, c := range []struct {
			what      string
			got, want float64
		}{{"rmse_before", got.RMSEBefore, want.RMSEBefore}, {"rmse_after", got.RMSEAfter, want.RMSEAfter}} {
			if d := math.Abs(c.got/c.want - 1); d > 0.005 || (n == 1 && c.got != c.want) {
				t.Errorf("-n %d: %s %v, one process %v", n, c.what, c.got, c.want)
			}
		}
		if got.NTrain != want.NTrain || got.NVal != want.NVal || got.NTest != want.NTest || got.NAug != want.NAug || got.Draws != want.Draws ||
			got.SplitFingerprint == "" || got.SplitFingerprint != want.SplitFingerprint {
			t.Errorf("-n %d: split or sampling differs: %+v", n, got)
		}
		if n == 1 && !slicesEqualF(aug.Val, wantAug.Val) {
			t.Errorf("-n 1: values differ from one process's")
		}
		t.Logf("-n %d: rmse %.6f → %.6f (one process %.6f → %.6f), exchange %s, %.3fs communicating", n, got.RMSEBefore, got.RMSEAfter, want.RMSEBefore, want.RMSEAfter, got.Dist.Exchange, got.Dist.CommSeconds)
	}
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func slicesEqualF(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDistParallelOutput: every rank writes its range of the augmented
// cells into one file (tensor.WriteFileParallel): a .bin.gz (a gzip member
// per rank and section) and a .tns written by 1 and 3 ranks hold the cells
// of one process's run, and nothing else is left in the directory.
func TestDistParallelOutput(t *testing.T) {
	l := mpiLauncher(t)
	dir := t.TempDir()
	args := append([]string{"augment", "-input", "testdata/golden/input.tsv"}, distFlags...)
	if code := run(append(args, "-output", filepath.Join(dir, "one.bin")), io.Discard, os.Stderr); code != 0 {
		t.Fatalf("one process: exit %d", code)
	}
	want, err := tensor.ReadFile(filepath.Join(dir, "one.bin"), tensor.ReadOptions{Format: tensor.BIN, IndexBase: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3} {
		for _, name := range []string{fmt.Sprintf("d%d.bin.gz", n), fmt.Sprintf("d%d.tns", n)} {
			out := filepath.Join(dir, name)
			if code, msg := mpiRun(t, l, n, nil, append(args, "-dist", "mpi", "-output", out)...); code != 0 {
				t.Fatalf("-n %d, %s: exit %d\n%s", n, name, code, msg)
			}
			got, err := tensor.ReadFile(out, tensor.ReadOptions{Format: tensor.FormatOf(name), IndexBase: -1})
			if err != nil {
				t.Fatalf("-n %d: %v", n, err)
			}
			if !slicesEqual(got.Idx, want.Idx) || (n == 1 && !slicesEqualF(got.Val, want.Val)) || len(got.Val) != len(want.Val) {
				t.Errorf("-n %d, %s: %d cells, not one process's %d", n, name, got.NNZ(), want.NNZ())
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 5 {
		t.Errorf("%d files in the output directory, want 5", len(ents))
	}
}

// TestDistBadInput: a bad line or a repeated cell anywhere in the file is
// reported once, as one process reports it (file:line), every rank exits
// 1, and nothing is written.
func TestDistBadInput(t *testing.T) {
	l := mpiLauncher(t)
	cases := []struct {
		name string
		edit func([]string) []string
	}{
		{"bad value late", func(ls []string) []string { ls[len(ls)-30] = "1\t2\t3\tnope"; return ls }},
		{"bad index mid", func(ls []string) []string { ls[len(ls)/2+3] = "1\t-2\t3\t1.5"; return ls }},
		{"fields early", func(ls []string) []string { ls[5] = "1\t2\t1.5"; return ls }},
		{"two bad lines", func(ls []string) []string { ls[len(ls)-3] = "x\t2\t3\t1"; ls[len(ls)/3] = "1\t2\t3\tinf"; return ls }},
		{"duplicate across ranks", func(ls []string) []string { ls[len(ls)-2] = ls[10]; return ls }},
		{"duplicates", func(ls []string) []string {
			// The earliest repeat is the reported one, whichever round and
			// rank find the others.
			for i := 0; i < 20; i++ {
				ls[len(ls)-2-47*i] = ls[10+3*i]
			}
			return ls
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := withComments(t, dir, c.edit)
			distFails(t, l, dir, "-input", in, "-index-base", "0")
		})
	}
}

// binInput writes the golden input as a .bin file after edit (which may
// change its cells), and returns its path.
func binInput(t *testing.T, dir string, edit func(c *tensor.COO)) string {
	t.Helper()
	c, err := tensor.ReadFile("testdata/golden/input.tsv", tensor.ReadOptions{Format: tensor.TSV, IndexBase: 0})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(c)
	}
	p := filepath.Join(dir, "in.bin")
	if err := tensor.WriteFile(p, c, tensor.WriteOptions{Format: tensor.BIN}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDistBin: a .bin input, each rank reading its range of every column,
// gives on 1, 2 and 3 ranks the cells one process gives (bit-identical on
// one rank); bad .bin input (an index out of range late in the file, a bad
// value, a repeated cell across ranks, a truncated file, gzip) is reported
// once, as one process reports it, and nothing is written.
func TestDistBin(t *testing.T) {
	l := mpiLauncher(t)
	dir := t.TempDir()
	in := binInput(t, dir, nil)
	distSameRun(t, l, dir, in)

	// patch writes the golden .bin with cell k's index of mode m (m < 3) or
	// value (m = 3) set to the bytes of v, whatever the writer allows.
	patch := func(t *testing.T, dir string, edits ...[3]uint64) string {
		p := binInput(t, dir, nil)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		le := binary.LittleEndian
		iw, vw := int(le.Uint64(b[4:])), int(le.Uint64(b[12:]))
		order, nnz := 3, 0
		if iw == 4 {
			nnz = int(le.Uint32(b[20+4*iw:]))
		} else {
			nnz = int(le.Uint64(b[20+4*iw:]))
		}
		header := 20 + (2+order)*iw
		for _, e := range edits {
			k, m, v := int(e[0]), int(e[1]), e[2]
			at, w := header+m*nnz*iw+k*iw, iw
			if m == order {
				at, w = header+order*nnz*iw+k*vw, vw
			}
			if w == 4 {
				le.PutUint32(b[at:], uint32(v))
			} else {
				le.PutUint64(b[at:], v)
			}
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	golden, err := tensor.ReadFile(in, tensor.ReadOptions{Format: tensor.BIN})
	if err != nil {
		t.Fatal(err)
	}
	nnz := uint64(golden.NNZ())
	cases := []struct {
		name string
		path func(t *testing.T, dir string) string
	}{
		{"index late", func(t *testing.T, dir string) string { return patch(t, dir, [3]uint64{nnz - 5, 1, 1 << 30}) }},
		{"index of mode 3 before a value", func(t *testing.T, dir string) string {
			return patch(t, dir, [3]uint64{3, 3, math.Float64bits(math.NaN())}, [3]uint64{nnz - 5, 2, 1 << 30})
		}},
		{"value", func(t *testing.T, dir string) string {
			return patch(t, dir, [3]uint64{nnz - 7, 3, math.Float64bits(math.Inf(-1))})
		}},
		{"duplicate across ranks", func(t *testing.T, dir string) string {
			var e [][3]uint64
			for m := 0; m < 3; m++ {
				e = append(e, [3]uint64{nnz - 2, uint64(m), uint64(golden.Idx[10*3+m])})
			}
			return patch(t, dir, e...)
		}},
		{"truncated", func(t *testing.T, dir string) string {
			p := binInput(t, dir, nil)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-9], 0o644)
			return p
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := c.path(t, dir)
			distFails(t, l, dir, "-input", in)
		})
	}
}

// distFails runs dainx augment with the input flags in on one process and
// on 1, 2 and 3 ranks (their duplicate search in many rounds), writing
// into dir: one process must fail, and every job must print its message
// exactly once, exit non-zero and write nothing.
func distFails(t *testing.T, l []string, dir string, in ...string) {
	t.Helper()
	args := append(append(append([]string{"augment"}, in...), "-output", filepath.Join(dir, "aug.tsv"), "-report", filepath.Join(dir, "r.json")), distFlags...)
	var stderr bytes.Buffer
	if code := run(args, &bytes.Buffer{}, &stderr); code != exitFailure {
		t.Fatalf("one process: exit %d", code)
	}
	want := strings.TrimSpace(stderr.String())
	for _, n := range []int{1, 2, 3} {
		// The duplicate search in rounds of 97 cells a rank.
		code, msg := mpiRun(t, l, n, []string{"DAINX_TEST_DUP_ROUND=97"}, append(args, "-dist", "mpi")...)
		if code == 0 {
			t.Fatalf("-n %d: exit 0", n)
		}
		if strings.Count(msg, want) != 1 || strings.Count(msg, "dainx augment:") != 1 {
			t.Errorf("-n %d: output\n%s\nwant once: %s", n, msg, want)
		}
		for _, f := range []string{"aug.tsv", "r.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				t.Errorf("-n %d: %s written", n, f)
			}
		}
	}
	t.Logf("%s", want)
}

// TestDistKilledRank: a rank killed mid-run (SIGKILL) makes the job exit
// non-zero with nothing written. The run is long (5000 epochs a stage, far
// more than any machine does in the half second before the kill) so that
// the kill always lands mid-run; the test lasts only until the job ends.
func TestDistKilledRank(t *testing.T) {
	l := mpiLauncher(t)
	dir := t.TempDir()
	out, rep := filepath.Join(dir, "aug.tsv"), filepath.Join(dir, "r.json")
	args := append([]string{"augment", "-dist", "mpi", "-input", "testdata/golden/input.tsv", "-output", out, "-report", rep}, distFlags...)
	args = append(args, "-epochs", "5000", "-patience", "5000")
	for _, n := range []int{2, 3} {
		t0 := time.Now()
		code, msg := mpiRun(t, l, n, []string{"DAINX_TEST_KILL_RANK=" + strconv.Itoa(n-1), "DAINX_TEST_KILL_AFTER=500ms"}, args...)
		if code == 0 {
			t.Fatalf("-n %d: exit 0 with rank %d killed\n%s", n, n-1, msg)
		}
		for _, f := range []string{out, rep} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("-n %d: %s written", n, f)
			}
		}
		t.Logf("-n %d: rank %d killed after 0.5s: exit %d after %.1fs", n, n-1, code, time.Since(t0).Seconds())
	}
}

// TestDistNoMPI: -dist mpi without an MPI library fails with the reason.
func TestDistNoMPI(t *testing.T) {
	t.Setenv("DAINX_LIBMPI", "/nonexistent/libmpi.so.12")
	var stderr bytes.Buffer
	code := run([]string{"augment", "-dist", "mpi", "-quiet", "-epochs", "1"}, &bytes.Buffer{}, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "-dist mpi: no MPI library: tried /nonexistent/libmpi.so.12") {
		t.Fatalf("exit %d, %q", code, stderr.String())
	}
	if code := run([]string{"augment", "-dist", "tcp"}, &bytes.Buffer{}, &stderr); code != exitUsage {
		t.Fatalf("-dist tcp: exit %d", code)
	}
}

// With DAINX_TEST_AS_DAINX=1 and DAINX_TEST_KILL_RANK=r, rank r of an MPI
// job (MPICH's PMI_RANK or Open MPI's OMPI_COMM_WORLD_RANK) kills itself
// with SIGKILL after DAINX_TEST_KILL_AFTER, or at DAINX_TEST_KILL_AT (see
// TestMain; the other ranks then ignore it).
func init() {
	r := os.Getenv("DAINX_TEST_KILL_RANK")
	if os.Getenv("DAINX_TEST_AS_DAINX") != "1" || r == "" {
		return
	}
	if me := mpiRank(); me != r {
		os.Unsetenv("DAINX_TEST_KILL_AT")
		return
	}
	after, err := time.ParseDuration(os.Getenv("DAINX_TEST_KILL_AFTER"))
	if err != nil {
		return // killed at a point of the run instead (DAINX_TEST_KILL_AT)
	}
	go func() {
		time.Sleep(after)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}()
}

// With DAINX_TEST_AS_DAINX=1 and DAINX_TEST_DUP_ROUND=n, the search of
// -dist mpi for repeated cells sends at most n cells a rank in one round
// (dupRound, readOptions.DupRound): a small tensor then takes many
// rounds. A value that is not a positive number fails the run.
func init() {
	v := os.Getenv("DAINX_TEST_DUP_ROUND")
	if os.Getenv("DAINX_TEST_AS_DAINX") != "1" || v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "DAINX_TEST_DUP_ROUND=%q: want a positive number of cells\n", v)
		os.Exit(3)
	}
	dupRound = n
}

// mpiRank returns this process's rank in an MPI job as the launcher gives
// it, "" outside one.
func mpiRank() string {
	if me := os.Getenv("PMI_RANK"); me != "" {
		return me
	}
	return os.Getenv("OMPI_COMM_WORLD_RANK")
}

// TestDistCheckpoint: -dist mpi -checkpoint saves every rank's state; a
// run whose rank 1 is killed (SIGKILL) in Θ's training after its TracIn
// pass, in CoSTCo's, right after the new cells were saved, or in the
// retraining, continues with -resume on as many ranks to the uninterrupted
// run's output, byte for byte, and report; a checkpoint is not resumed on
// another number of ranks nor overwritten without -resume; and
// checkpointing does not change the run.
func TestDistCheckpoint(t *testing.T) {
	l := mpiLauncher(t)
	t.Run("replicated", func(t *testing.T) { distCheckpoint(t, l) })
	t.Run("sharded", func(t *testing.T) { distCheckpoint(t, l, "-embedding-optimizer", "sparse-adam", "-shard-tables", "on") })
}

func distCheckpoint(t *testing.T, l []string, extra ...string) {
	dir := t.TempDir()
	args := append([]string{"augment", "-dist", "mpi", "-input", "testdata/golden/input.tsv"}, distFlags...)
	args = append(append(args, "-epochs", "4", "-patience", "4"), extra...)
	runTo := func(name string, env []string, n int, extra ...string) (int, string) {
		return mpiRun(t, l, n, env, append(append(args, "-output", filepath.Join(dir, name+".tsv"), "-report", filepath.Join(dir, name+".json")), extra...)...)
	}
	if code, msg := runTo("plain", nil, 2); code != 0 {
		t.Fatalf("without a checkpoint: exit %d\n%s", code, msg)
	}
	if code, msg := runTo("whole", nil, 2, "-checkpoint", filepath.Join(dir, "ck-whole")); code != 0 {
		t.Fatalf("checkpointed: exit %d\n%s", code, msg)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "plain.tsv"))
	if got, _ := os.ReadFile(filepath.Join(dir, "whole.tsv")); len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatalf("the checkpointed run's cells differ from the plain run's")
	}
	rmse := func(name string) [2]float64 {
		r := readReport(t, filepath.Join(dir, name+".json"))
		return [2]float64{r.RMSEBefore, r.RMSEAfter}
	}
	wantRMSE := rmse("plain")
	for i, at := range []string{"theta-mlp.tracin-last:2:tracin", "theta-costco:3:saved", "augmented:0:saved", "retrain:2:trained"} {
		ck := filepath.Join(dir, fmt.Sprintf("ck%d", i))
		name := fmt.Sprintf("r%d", i)
		code, msg := runTo(name, []string{"DAINX_TEST_KILL_RANK=1", "DAINX_TEST_KILL_AT=" + at}, 2, "-checkpoint", ck)
		if code == 0 {
			t.Fatalf("killed at %s: exit 0\n%s", at, msg)
		}
		if _, err := os.Stat(filepath.Join(dir, name+".tsv")); err == nil {
			t.Fatalf("killed at %s: output written", at)
		}
		if code, msg := runTo(name, nil, 2, "-checkpoint", ck, "-resume"); code != 0 {
			t.Fatalf("resumed after a kill at %s: exit %d\n%s", at, code, msg)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, name+".tsv")); !bytes.Equal(got, want) {
			t.Errorf("resumed after a kill at %s: the cells differ from the uninterrupted run's", at)
		}
		if got := rmse(name); got != wantRMSE {
			t.Errorf("resumed after a kill at %s: RMSEs %v, want %v", at, got, wantRMSE)
		}
	}
	ck := filepath.Join(dir, "ck-whole")
	if code, msg := runTo("other", nil, 3, "-checkpoint", ck, "-resume"); code == 0 || !strings.Contains(msg, "written by an MPI run of 2 ranks") || !strings.Contains(msg, "mpiexec -n 2") {
		t.Errorf("resumed on 3 ranks: exit %d\n%s", code, msg)
	}
	if code, msg := runTo("again", nil, 2, "-checkpoint", ck); code == 0 || !strings.Contains(msg, "-resume") {
		t.Errorf("a new run into a checkpoint: exit %d\n%s", code, msg)
	}
}

// TestDistShardedTables: with the embedding tables sharded by row over
// 2 and 3 ranks (-shard-tables on, both models) the augmented cells,
// their values and the RMSEs are those of the same run with the tables
// replicated (sparse-adam), byte for byte; on one rank, which holds every
// row, -shard-tables on is the one-process run; the report names the
// sharded tables; -shard-tables on with dense Adam, or without -dist mpi,
// is refused.
func TestDistShardedTables(t *testing.T) {
	l := mpiLauncher(t)
	dir := t.TempDir()
	args := append([]string{"augment", "-input", "testdata/golden/input.tsv", "-embedding-optimizer", "sparse-adam"}, distFlags...)
	if code := run(append(args, "-output", filepath.Join(dir, "one.tsv")), &bytes.Buffer{}, os.Stderr); code != 0 {
		t.Fatalf("one process: exit %d", code)
	}
	one, _ := os.ReadFile(filepath.Join(dir, "one.tsv"))
	report := func(name string) dain.Report { return readReport(t, filepath.Join(dir, name+".json")) }
	for _, n := range []int{1, 2, 3} {
		out := map[string][]byte{}
		for _, mode := range []string{"off", "on"} {
			name := fmt.Sprintf("n%d-%s", n, mode)
			code, msg := mpiRun(t, l, n, nil, append(args, "-dist", "mpi", "-shard-tables", mode, "-output", filepath.Join(dir, name+".tsv"), "-report", filepath.Join(dir, name+".json"))...)
			if code != 0 {
				t.Fatalf("-n %d -shard-tables %s: exit %d\n%s", n, mode, code, msg)
			}
			out[mode], _ = os.ReadFile(filepath.Join(dir, name+".tsv"))
		}
		off, on := report(fmt.Sprintf("n%d-off", n)), report(fmt.Sprintf("n%d-on", n))
		if len(out["on"]) == 0 || !bytes.Equal(out["on"], out["off"]) {
			t.Errorf("-n %d: the sharded run's cells or values differ from the replicated run's", n)
		}
		if on.RMSEBefore != off.RMSEBefore || on.RMSEAfter != off.RMSEAfter {
			t.Errorf("-n %d: RMSEs %v → %v sharded, %v → %v replicated", n, on.RMSEBefore, on.RMSEAfter, off.RMSEBefore, off.RMSEAfter)
		}
		wantSharded := []string{"mlp", "costco"}
		if n == 1 {
			wantSharded = nil // a cluster of one holds every row: nothing to shard
		}
		if (on.Dist.Exchange == "sharded") != (n > 1) || !slices.Equal(on.Dist.ShardedTables, wantSharded) || off.Dist.ShardedTables != nil {
			t.Errorf("-n %d: exchange %q, sharded tables %v (replicated: %v)", n, on.Dist.Exchange, on.Dist.ShardedTables, off.Dist.ShardedTables)
		}
		if n == 1 && !bytes.Equal(out["on"], one) {
			t.Errorf("-n 1 sharded: the output differs from one process's")
		}
	}
	for _, bad := range [][]string{{"-dist", "mpi", "-embedding-optimizer", "adam"}, {}} {
		code, msg := mpiRun(t, l, 1, nil, append(append(append([]string{"augment", "-input", "testdata/golden/input.tsv"}, distFlags...), bad...), "-shard-tables", "on", "-output", filepath.Join(dir, "bad.tsv"))...)
		if code == 0 || !strings.Contains(msg, "shard") {
			t.Errorf("-shard-tables on %v: exit %d\n%s", bad, code, msg)
		}
		if _, err := os.Stat(filepath.Join(dir, "bad.tsv")); err == nil {
			t.Errorf("-shard-tables on %v: output written", bad)
		}
	}
}

// TestDistEval: dainx eval -dist mpi spreads the repeats over the ranks and
// writes the runs of one process; with -spread runs it spreads every run
// over the ranks instead, with the same runs (RMSEs within 1%).
func TestDistEval(t *testing.T) {
	l := mpiLauncher(t)
	dir := t.TempDir()
	args := []string{"eval", "-input", "testdata/golden/input.tsv", "-backend", "cpu", "-quiet", "-layers", "24,16,8", "-epochs", "3",
		"-batch", "128", "-rank", "4", "-channels", "4", "-methods", "dain,random-costco", "-ratios", "0,0.4", "-repeats", "3"}
	if code := run(append(args, "-out", filepath.Join(dir, "one")), &bytes.Buffer{}, os.Stderr); code != 0 {
		t.Fatalf("one process: exit %d", code)
	}
	read := func(d string) []any {
		b, err := os.ReadFile(filepath.Join(dir, d, "runs.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Runs []map[string]any }
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		var out []any
		for _, run := range r.Runs {
			out = append(out, []any{run["repeat"], run["method"], run["ratio"], run["rmse"], run["n_aug"]})
		}
		return out
	}
	want := fmt.Sprint(read("one"))
	for _, n := range []int{2, 3} {
		d := fmt.Sprintf("d%d", n)
		if code, msg := mpiRun(t, l, n, nil, append(args, "-dist", "mpi", "-out", filepath.Join(dir, d))...); code != 0 {
			t.Fatalf("-n %d: exit %d\n%s", n, code, msg)
		}
		if got := fmt.Sprint(read(d)); got != want {
			t.Errorf("-n %d: runs\n%s\nwant\n%s", n, got, want)
		}
	}
	// -spread runs: every run spread over the ranks, each holding its
	// share of the cells: the same runs and new-cell counts, test RMSEs
	// within 1%.
	oneRuns := read("one")
	for _, n := range []int{1, 2} {
		d := fmt.Sprintf("runs%d", n)
		if code, msg := mpiRun(t, l, n, nil, append(args, "-dist", "mpi", "-spread", "runs", "-out", filepath.Join(dir, d))...); code != 0 {
			t.Fatalf("-spread runs -n %d: exit %d\n%s", n, code, msg)
		}
		got := read(d)
		if len(got) != len(oneRuns) {
			t.Fatalf("-spread runs -n %d: %d runs, one process %d", n, len(got), len(oneRuns))
		}
		for i := range got {
			g, w := got[i].([]any), oneRuns[i].([]any)
			if fmt.Sprint(g[0], g[1], g[2], g[4]) != fmt.Sprint(w[0], w[1], w[2], w[4]) {
				t.Errorf("-spread runs -n %d: run %d is %v, one process's %v", n, i, g, w)
			}
			if r := g[3].(float64) / w[3].(float64); math.Abs(r-1) > 0.01 || (n == 1 && r != 1) {
				t.Errorf("-spread runs -n %d: run %v: rmse %v, one process %v", n, w[:3], g[3], w[3])
			}
		}
	}
}

// readReport reads the JSON report at path.
func readReport(t *testing.T, path string) dain.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r dain.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// TestDistOutputIsInput (issue 31): under -dist mpi too, an -output that
// is the input, or the report, is refused before any work: exit 1, one
// message naming the path, the input byte for byte, nothing written.
func TestDistOutputIsInput(t *testing.T) {
	l := mpiLauncher(t)
	dir := t.TempDir()
	src, _ := os.ReadFile("testdata/golden/input.tsv")
	in := filepath.Join(dir, "in.tsv")
	os.WriteFile(in, src, 0o644)
	rep := filepath.Join(dir, "r.json")
	for _, out := range []string{in, rep} {
		code, msg := mpiRun(t, l, 2, nil, append([]string{"augment", "-dist", "mpi", "-input", in, "-output", out, "-report", rep}, distFlags...)...)
		if code != exitFailure || strings.Count(msg, "cannot write "+out) != 1 {
			t.Errorf("-output %s: exit %d, want 1 and one message naming it:\n%s", out, code, msg)
		}
		if b, _ := os.ReadFile(in); !bytes.Equal(b, src) {
			t.Fatalf("-output %s: the input changed", out)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("-output %s: %d files in the directory, want the input alone", out, len(ents))
		}
	}
}

// TestRankDevice: ranks take the GPUs round-robin from -device, also when
// a node runs more ranks than it has GPUs (the first GPU run of -dist mpi,
// 2026-11-26: two ranks on one GPU failed with "device 1 of 1"); without a
// driver the ordinal is -device + the local rank, for the backend to refuse.
func TestRankDevice(t *testing.T) {
	gpus := func(n int) func() (int, error) { return func() (int, error) { return n, nil } }
	none := func() (int, error) { return 0, errors.New("no driver") }
	for _, c := range []struct {
		device, local int
		count         func() (int, error)
		want          int
	}{
		{0, 0, gpus(1), 0}, {0, 1, gpus(1), 0}, {0, 3, gpus(2), 1},
		{1, 0, gpus(2), 1}, {1, 1, gpus(2), 0}, {0, 5, gpus(8), 5},
		{0, 1, none, 1}, {2, 1, gpus(0), 3},
	} {
		if got := rankDevice(c.device, c.local, c.count); got != c.want {
			t.Errorf("rankDevice(%d, %d) = %d, want %d", c.device, c.local, got, c.want)
		}
	}
}

// TestDistMethods (issue 32): every method of dainx eval, bayes-fm and
// auto as final model and value predictor, and the oracle's values run
// under -dist mpi through the one pipeline. On one rank the augmented
// tensor is one process's byte for byte, with the same RMSEs; on two
// ranks the split fingerprint and the number of new cells are one
// process's and the test RMSEs within 1%.
func TestDistMethods(t *testing.T) {
	l := mpiLauncher(t)
	dir := t.TempDir()
	// Every method, and bayes-fm's Gibbs chain as the final model and the
	// value predictor, alone and as auto's candidate.
	type method struct {
		Name  string
		flags []string
	}
	var methods []method
	for _, v := range dain.Variants {
		methods = append(methods, method{v.Name, []string{"-input", "testdata/golden/input.tsv", "-index-base", "0", "-method", v.Name}})
	}
	for _, m := range []string{"bayes-fm", "auto"} {
		methods = append(methods, method{m, []string{"-input", "testdata/golden/input.tsv", "-index-base", "0", "-final-model", m, "-predictor", m, "-bayes-rank", "4", "-bayes-samples", "30"}})
	}
	// The generator's values (with noise) on a tensor of dainx synth.
	in, gen := filepath.Join(dir, "synth.tsv"), filepath.Join(dir, "synth.json")
	if code, _, stderr := runCLI("synth", "-dims", "30,20,10", "-nnz", "1500", "-rank", "3", "-noise", "0.1", "-output", in, "-generator-out", gen); code != exitOK {
		t.Fatalf("synth: exit %d: %s", code, stderr)
	}
	methods = append(methods, method{"oracle", []string{"-input", in, "-values", "oracle", "-oracle", gen}})
	for _, v := range methods {
		t.Run(v.Name, func(t *testing.T) {
			// A validation sample smaller than the validation set, so
			// that in-run draws it over the ranks' shares.
			args := append(append([]string{"augment", "-influence-val-sample", "100"}, v.flags...), distFlags...)
			var one bytes.Buffer
			oneOut := filepath.Join(dir, v.Name+"-one.tsv")
			if code := run(append(args, "-output", oneOut), &one, os.Stderr); code != 0 {
				t.Fatalf("one process: exit %d", code)
			}
			var want dain.Report
			if err := json.Unmarshal(one.Bytes(), &want); err != nil {
				t.Fatal(err)
			}
			wantBytes, _ := os.ReadFile(oneOut)
			for _, n := range []int{1, 2} {
				out, rep := filepath.Join(dir, fmt.Sprintf("%s-%d.tsv", v.Name, n)), filepath.Join(dir, fmt.Sprintf("%s-%d.json", v.Name, n))
				code, msg := mpiRun(t, l, n, nil, append(args, "-dist", "mpi", "-output", out, "-report", rep)...)
				if code != 0 {
					t.Fatalf("-n %d: exit %d\n%s", n, code, msg)
				}
				got := readReport(t, rep)
				gotBytes, _ := os.ReadFile(out)
				if got.Dist == nil || got.Dist.Ranks != n {
					t.Errorf("-n %d: the report's dist %+v", n, got.Dist)
				}
				if got.SplitFingerprint != want.SplitFingerprint || got.NAug != want.NAug || got.NTrain != want.NTrain {
					t.Errorf("-n %d: split %s, %d new of %d training cells; one process %s, %d of %d", n, got.SplitFingerprint, got.NAug, got.NTrain, want.SplitFingerprint, want.NAug, want.NTrain)
				}
				for _, c := range []struct {
					what      string
					got, want float64
				}{{"rmse_before", got.RMSEBefore, want.RMSEBefore}, {"rmse_after", got.RMSEAfter, want.RMSEAfter}} {
					if d := math.Abs(c.got/c.want - 1); d > 0.01 || (n == 1 && c.got != c.want) {
						t.Errorf("-n %d: %s %v, one process %v", n, c.what, c.got, c.want)
					}
				}
				if n == 1 && !bytes.Equal(gotBytes, wantBytes) {
					t.Errorf("-n 1: the augmented tensor differs from one process's")
				}
				t.Logf("-n %d: rmse %.5f → %.5f (one process %.5f → %.5f), %d new cells", n, got.RMSEBefore, got.RMSEAfter, want.RMSEBefore, want.RMSEAfter, got.NAug)
			}
		})
	}
}

// TestDistOutputs (issue 48): one runner for one process and -dist mpi.
// With no test set (-test-frac 0), one rank writes the model files
// (-model-out, -model-out-all), the split, the scores, the importance and
// the new cells of one process byte for byte, and its report's numbers;
// two ranks write the models (rank 0) and the importance (within the
// summation order's rounding), and refuse -split-out and -scores-out, and
// -model-out with -shard-tables on, as usage errors naming the flag,
// printed once, with nothing written.
func TestDistOutputs(t *testing.T) {
	l := mpiLauncher(t)
	dir := t.TempDir()
	args := append([]string{"augment", "-input", "testdata/golden/input.tsv", "-index-base", "0", "-test-frac", "0"}, distFlags...)
	outs := func(name string, split bool) []string {
		d := filepath.Join(dir, name)
		os.Mkdir(d, 0o755)
		a := []string{"-output", filepath.Join(d, "aug.tsv"), "-report", filepath.Join(d, "report.json"),
			"-model-out", filepath.Join(d, "model"), "-model-out-all", "-importance-out", filepath.Join(d, "importance.tsv")}
		if split {
			a = append(a, "-split-out", filepath.Join(d, "split"), "-scores-out", filepath.Join(d, "scores.tsv"))
		}
		return a
	}
	if code := run(append(args, outs("one", true)...), io.Discard, os.Stderr); code != 0 {
		t.Fatalf("one process: exit %d", code)
	}
	want := readReport(t, filepath.Join(dir, "one", "report.json"))
	if !want.NoTest {
		t.Fatalf("one process: no_test %v", want.NoTest)
	}
	files := []string{"aug.tsv", "importance.tsv", "scores.tsv", "split/train.tsv", "split/val.tsv", "split/test.tsv"}
	for _, role := range []string{"model", "theta", "predictor"} {
		files = append(files, "model/"+role+".json", "model/"+role+".safetensors")
	}
	code, msg := mpiRun(t, l, 1, nil, append(append(args, "-dist", "mpi"), outs("n1", true)...)...)
	if code != 0 {
		t.Fatalf("-n 1: exit %d\n%s", code, msg)
	}
	for _, f := range files {
		w, err := os.ReadFile(filepath.Join(dir, "one", f))
		if err != nil {
			t.Fatal(err)
		}
		if g, err := os.ReadFile(filepath.Join(dir, "n1", f)); err != nil || !bytes.Equal(g, w) {
			t.Errorf("-n 1: %s differs from one process's (%v)", f, err)
		}
	}
	got := readReport(t, filepath.Join(dir, "n1", "report.json"))
	if got.Dist == nil || got.Dist.Ranks != 1 || !got.NoTest || got.RMSEBefore != want.RMSEBefore || got.RMSEAfter != want.RMSEAfter || got.Version != want.Version || len(got.Outputs) != len(want.Outputs) {
		t.Errorf("-n 1: report %+v\none process %+v", got, want)
	}

	code, msg = mpiRun(t, l, 2, nil, append(append(args, "-dist", "mpi"), outs("n2", false)...)...)
	if code != 0 {
		t.Fatalf("-n 2: exit %d\n%s", code, msg)
	}
	got = readReport(t, filepath.Join(dir, "n2", "report.json"))
	if !got.NoTest || got.SplitFingerprint != want.SplitFingerprint || math.Abs(got.RMSEAfter/want.RMSEAfter-1) > 0.01 {
		t.Errorf("-n 2: no_test %v, split %s, rmse_after %v; one process %s, %v", got.NoTest, got.SplitFingerprint, got.RMSEAfter, want.SplitFingerprint, want.RMSEAfter)
	}
	for _, role := range []string{"model", "theta", "predictor"} {
		w, _ := os.Stat(filepath.Join(dir, "one", "model", role+".safetensors"))
		g, err := os.Stat(filepath.Join(dir, "n2", "model", role+".safetensors"))
		if err != nil || g.Size() != w.Size() {
			t.Errorf("-n 2: %s.safetensors: %v", role, err)
		}
	}
	wi, gi := readImportance(t, filepath.Join(dir, "one", "importance.tsv")), readImportance(t, filepath.Join(dir, "n2", "importance.tsv"))
	if len(gi) != len(wi) {
		t.Fatalf("-n 2: %d importance lines, one process %d", len(gi), len(wi))
	}
	for k, w := range wi {
		if g, ok := gi[k]; !ok || math.Abs(g-w) > 1e-3*math.Max(w, 1e-3) {
			t.Errorf("-n 2: importance of %s: %v, one process %v", k, g, w)
		}
	}

	for _, bad := range [][]string{
		{"-split-out", filepath.Join(dir, "bad", "split")},
		{"-scores-out", filepath.Join(dir, "bad", "scores.tsv")},
		{"-model-out", filepath.Join(dir, "bad", "model"), "-shard-tables", "on"},
	} {
		os.RemoveAll(filepath.Join(dir, "bad"))
		os.Mkdir(filepath.Join(dir, "bad"), 0o755)
		rep := filepath.Join(dir, "bad", "report.json")
		code, msg := mpiRun(t, l, 2, nil, append(append(args, "-dist", "mpi", "-report", rep), bad...)...)
		if code != exitUsage || strings.Count(msg, bad[0]) != 1 {
			t.Errorf("-n 2 %s: exit %d, want %d and one message naming it:\n%s", bad[0], code, exitUsage, msg)
		}
		if ents, _ := os.ReadDir(filepath.Join(dir, "bad")); len(ents) != 0 {
			t.Errorf("-n 2 %s: %d files written", bad[0], len(ents))
		}
	}
}

// readImportance reads an -importance-out file: importance by "mode index".
func readImportance(t *testing.T, path string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) != 3 {
			continue
		}
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[f[0]+" "+f[1]] = v
	}
	return out
}
