package mpi

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// launcher returns the mpiexec command line the tests use: $DAINX_MPIEXEC
// split at spaces (for example "mpiexec.openmpi --oversubscribe"), else
// mpiexec.mpich or mpiexec; nil when none is installed.
func launcher() []string {
	cmd := strings.Fields(os.Getenv("DAINX_MPIEXEC"))
	if len(cmd) == 0 {
		cmd = []string{"mpiexec"}
		if _, err := exec.LookPath("mpiexec.mpich"); err == nil {
			cmd = []string{"mpiexec.mpich"}
		}
	}
	if _, err := exec.LookPath(cmd[0]); err != nil {
		return nil
	}
	return cmd
}

// envOptions returns the Options the dainx commands take from the
// environment (cmd/internal/cli.MPIOptions): DAINX_LIBMPI, DAINX_MPI_YIELD,
// DAINX_MPI_WAIT and the launcher's variables through os.Getenv.
func envOptions() Options {
	o := Options{Library: os.Getenv("DAINX_LIBMPI"), Getenv: os.Getenv, SleepWait: os.Getenv("DAINX_MPI_WAIT") == "sleep"}
	switch os.Getenv("DAINX_MPI_YIELD") {
	case "1":
		o.Yield = YieldOn
	case "0":
		o.Yield = YieldOff
	}
	return o
}

// TestLauncherEnvironment: which launcher started the process, and how
// many ranks it started on the node, are read from Options.Getenv alone
// (nil: an empty environment).
func TestLauncherEnvironment(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "4")
	t.Setenv("MPI_LOCALNRANKS", "4")
	if got := sonames(Options{}.getenv()); got[0] != "libmpich.so.12" {
		t.Errorf("nil Getenv: sonames %v, want MPICH's first", got)
	}
	if n := launcherLocalRanks(Options{}.getenv()); n != 0 {
		t.Errorf("nil Getenv: %d local ranks, want 0", n)
	}
	if got := sonames(env("OMPI_COMM_WORLD_SIZE", "2")); got[0] != "libmpi.so.40" {
		t.Errorf("under Open MPI's launcher: sonames %v, want Open MPI's first", got)
	}
	for _, c := range []struct {
		kv   []string
		want int
	}{
		{nil, 0},
		{[]string{"MPI_LOCALNRANKS", "3"}, 3},
		{[]string{"OMPI_COMM_WORLD_LOCAL_SIZE", "5"}, 5},
		{[]string{"SLURM_NTASKS_PER_NODE", "2(x3)"}, 0},
		{[]string{"SLURM_NTASKS_PER_NODE", "7"}, 7},
	} {
		if n := launcherLocalRanks(env(c.kv...)); n != c.want {
			t.Errorf("%v: %d local ranks, want %d", c.kv, n, c.want)
		}
	}
}

func TestNoLibrary(t *testing.T) {
	_, err := load([]string{"/nonexistent/libmpi.so.12"})
	if !errors.Is(err, ErrNoMPI) || !strings.Contains(err.Error(), "/nonexistent/libmpi.so.12") || !strings.Contains(err.Error(), "apt-get install mpich") {
		t.Fatalf("error %v: want ErrNoMPI naming the path tried and how to install MPI", err)
	}
}

// TestCollectives runs TestRanks under mpiexec with 1, 2 and 3 ranks,
// with the blocking collectives and with the yielding ones (their
// nonblocking forms completed by MPI_Test between sleeps,
// DAINX_MPI_YIELD=1: Options.Yield YieldOn).
func TestCollectives(t *testing.T) {
	if os.Getenv("DAINX_MPI_CHILD") != "" {
		t.Skip("in a rank")
	}
	l := launcher()
	if l == nil {
		t.Skip("no mpiexec (apt-get install mpich)")
	}
	for _, c := range []struct {
		n     int
		yield string
	}{{1, "0"}, {2, "0"}, {3, "0"}, {1, "1"}, {2, "1"}, {3, "1"}} {
		n := c.n
		args := append(append([]string(nil), l[1:]...), "-n", strconv.Itoa(n), os.Args[0], "-test.run", "^TestRanks$", "-test.v")
		cmd := exec.Command(l[0], args...)
		cmd.Env = append(os.Environ(), "DAINX_MPI_CHILD=1", "DAINX_MPI_SIZE="+strconv.Itoa(n), "DAINX_MPI_YIELD="+c.yield)
		// Open MPI refuses root and more ranks than cores unless told.
		cmd.Env = append(cmd.Env, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s -n %d: %v\n%s", l[0], n, err, out)
		}
		if got := strings.Count(string(out), "--- PASS: TestRanks"); got != n {
			t.Fatalf("%s -n %d: %d ranks passed\n%s", l[0], n, got, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "rank 0 of") {
				t.Logf("-n %d: %s", n, strings.TrimSpace(line))
			}
		}
	}
}

// TestRanks is one rank of TestCollectives.
func TestRanks(t *testing.T) {
	if os.Getenv("DAINX_MPI_CHILD") == "" {
		t.Skip("run by TestCollectives under mpiexec")
	}
	c, err := Init(envOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Finalize()
	want, _ := strconv.Atoi(os.Getenv("DAINX_MPI_SIZE"))
	r, p := c.Rank(), c.Size()
	if p != want || r < 0 || r >= p {
		t.Fatalf("rank %d of %d, want %d ranks", r, p, want)
	}
	lr, ln := c.LocalRank()
	if lr != r || ln != p {
		t.Errorf("node-local rank %d of %d, want %d of %d (one node)", lr, ln, r, p)
	}
	t.Logf("%s (%s), rank %d of %d, yielding %v", c.Version(), c.ABI(), r, p, c.Yielding())
	if want := os.Getenv("DAINX_MPI_YIELD") == "1"; c.Yielding() != want {
		t.Errorf("yielding collectives %v with DAINX_MPI_YIELD=%q", c.Yielding(), os.Getenv("DAINX_MPI_YIELD"))
	}

	f := []float32{float32(r), 1, float32(-r)}
	c.Allreduce(f, Sum)
	tri := float32(p * (p - 1) / 2)
	if f[0] != tri || f[1] != float32(p) || f[2] != -tri {
		t.Errorf("Allreduce float32 sum: %v", f)
	}
	d := []float64{float64(r) + 0.5}
	c.Allreduce(d, Max)
	if d[0] != float64(p-1)+0.5 {
		t.Errorf("Allreduce float64 max: %v", d)
	}
	i := []int64{int64(r) - 7, 1 << 40}
	c.Allreduce(i, Min)
	if i[0] != -7 || i[1] != 1<<40 {
		t.Errorf("Allreduce int64 min: %v", i)
	}
	b := []byte{byte(1 << r)}
	c.Allreduce(b, BitOr)
	if b[0] != byte(1<<p-1) {
		t.Errorf("Allreduce byte or: %v", b)
	}
	ex := []int64{int64(r + 1)}
	c.Exscan(ex, Sum)
	if ex[0] != int64(r*(r+1)/2) {
		t.Errorf("Exscan: %d", ex[0])
	}
	bc := []int32{0, 0}
	if r == p-1 {
		bc = []int32{42, 43}
	}
	c.Bcast(bc, p-1)
	if bc[0] != 42 || bc[1] != 43 {
		t.Errorf("Bcast: %v", bc)
	}
	ag := Allgather(c, []int32{int32(10 * r)})
	for k, v := range ag {
		if v != int32(10*k) {
			t.Errorf("Allgather: %v", ag)
		}
	}
	// Rank k sends k copies of k (rank 0 sends nothing).
	mine := make([]float64, r)
	for k := range mine {
		mine[k] = float64(r)
	}
	all, counts := Allgatherv(c, mine)
	if len(all) != p*(p-1)/2 || len(counts) != p {
		t.Fatalf("Allgatherv: %v %v", all, counts)
	}
	pos := 0
	for k := 0; k < p; k++ {
		for j := 0; j < k; j++ {
			if all[pos] != float64(k) {
				t.Errorf("Allgatherv: %v", all)
			}
			pos++
		}
	}
	g := Gatherv(c, mine, 0)
	if (r == 0) != (g != nil || p == 1) || (r == 0 && len(g) != p*(p-1)/2) {
		t.Errorf("Gatherv on rank %d: %v", r, g)
	}
	// Rank r sends j+1 values r*100+j to rank j.
	var send []int32
	sc := make([]int32, p)
	for j := 0; j < p; j++ {
		sc[j] = int32(j + 1)
		for k := 0; k <= j; k++ {
			send = append(send, int32(r*100+j))
		}
	}
	got, rc := Alltoallv(c, send, sc)
	if len(got) != p*(r+1) {
		t.Fatalf("Alltoallv: %v %v", got, rc)
	}
	for k := 0; k < p; k++ {
		if rc[k] != int32(r+1) {
			t.Errorf("Alltoallv counts %v", rc)
		}
		for j := 0; j <= r; j++ {
			if v := got[k*(r+1)+j]; v != int32(k*100+r) {
				t.Errorf("Alltoallv from %d: %d", k, v)
			}
		}
	}
	c.Barrier()
	if s := c.Stats(); s.Calls == 0 || s.Elapsed <= 0 {
		t.Errorf("stats %+v", s)
	}
}
