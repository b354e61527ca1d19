package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dainx/dainx/mpi"
)

// envAllowed are the folders, relative to the module's root, whose
// non-test code may read the environment: the commands (cmd/, and the
// benchmark commands under bench/) and the test-data locator
// internal/realdata. Every other package is a library: what a variable
// says reaches it as an option (docs/environment.md).
var envAllowed = []string{"cmd", "bench", "internal/realdata"}

// envReaders are the functions that read the process's environment.
var envReaders = map[string][]string{
	"os":      {"Getenv", "LookupEnv", "Environ", "ExpandEnv"},
	"syscall": {"Getenv", "Environ"},
}

// envReads returns, as "file:line: pkg.Func", every call or mention of an
// environment reader in the non-test Go files under root outside the
// allowed folders (testdata and hidden folders skipped); the import's
// local name is followed, so an aliased "os" is caught too.
func envReads(root string) ([]string, error) {
	var hits []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			for _, a := range envAllowed {
				if rel == a {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := map[string]string{} // local name → import path
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if _, ok := envReaders[p]; !ok {
				continue
			}
			name := p
			if im.Name != nil {
				name = im.Name.Name
			}
			local[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			p, ok := local[id.Name]
			if !ok {
				return true
			}
			for _, fn := range envReaders[p] {
				if sel.Sel.Name == fn {
					hits = append(hits, rel+":"+strconv.Itoa(fset.Position(sel.Pos()).Line)+": "+p+"."+fn)
				}
			}
			return true
		})
		return nil
	})
	sort.Strings(hits)
	return hits, err
}

// moduleRoot returns the folder of go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

// TestLibrariesReadNoEnvironment: no library package reads the
// environment (os.Getenv, os.LookupEnv, os.Environ, os.ExpandEnv and
// syscall's); only the commands (cmd/, bench/) and internal/realdata do,
// and pass what they read down as options. And the scan finds a reader
// where one is, aliased or not, and leaves the allowed folders and tests
// alone.
func TestLibrariesReadNoEnvironment(t *testing.T) {
	hits, err := envReads(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		t.Errorf("%s: a library package reads the environment; read it in the command (cmd/internal/cli) and pass an option (docs/environment.md)", h)
	}

	dir := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib/a.go", "package lib\n\nimport \"os\"\n\nvar A = os.Getenv(\"X\")\n")
	write("lib/b.go", "package lib\n\nimport xos \"os\"\n\nfunc B() bool { _, ok := xos.LookupEnv(\"X\"); return ok }\n")
	write("lib/c.go", "package lib\n\nimport \"syscall\"\n\nvar C, _ = syscall.Getenv(\"X\")\n")
	write("lib/d.go", "package lib\n\nimport \"os\"\n\n// os.Getenv in a comment is no call.\nvar D = os.Args\n")
	write("lib/a_test.go", "package lib\n\nimport \"os\"\n\nvar T = os.Getenv(\"X\")\n")
	write("cmd/x/main.go", "package main\n\nimport \"os\"\n\nfunc main() { os.Getenv(\"X\") }\n")
	write("bench/b.go", "package bench\n\nimport \"os\"\n\nvar E = os.Environ()\n")
	write("internal/realdata/r.go", "package realdata\n\nimport \"os\"\n\nvar R = os.Getenv(\"X\")\n")
	write("internal/other/o.go", "package other\n\nimport \"os\"\n\nvar O = os.Getenv(\"X\")\n")
	got, err := envReads(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"internal/other/o.go:5: os.Getenv", "lib/a.go:5: os.Getenv", "lib/b.go:5: os.LookupEnv", "lib/c.go:5: syscall.Getenv"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("scan of a planted tree:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMPIOptions: DAINX_LIBMPI, DAINX_MPI_YIELD and DAINX_MPI_WAIT reach
// mpi.Options, with the process's environment as Getenv.
func TestMPIOptions(t *testing.T) {
	for _, c := range []struct {
		lib, yield, wait string
		want             mpi.Options
	}{
		{"", "", "", mpi.Options{}},
		{"/opt/libmpich.so.12", "1", "sleep", mpi.Options{Library: "/opt/libmpich.so.12", Yield: mpi.YieldOn, SleepWait: true}},
		{"", "0", "yield", mpi.Options{Yield: mpi.YieldOff}},
		{"", "yes", "", mpi.Options{Yield: mpi.YieldAuto}},
	} {
		t.Setenv(EnvLibMPI, c.lib)
		t.Setenv(EnvMPIYield, c.yield)
		t.Setenv(EnvMPIWait, c.wait)
		t.Setenv("OMPI_COMM_WORLD_SIZE", "3")
		o := MPIOptions()
		if o.Getenv == nil || o.Getenv("OMPI_COMM_WORLD_SIZE") != "3" {
			t.Errorf("Getenv does not read the environment")
		}
		if o.Library != c.want.Library || o.Yield != c.want.Yield || o.SleepWait != c.want.SleepWait {
			t.Errorf("DAINX_LIBMPI=%q DAINX_MPI_YIELD=%q DAINX_MPI_WAIT=%q: %+v, want %+v", c.lib, c.yield, c.wait, o, c.want)
		}
	}
}

// TestEnvDefaults: DAINX_NCCL=1 alone makes -nccl's default on;
// DAINX_DEVICE is -device's default, a bad one an error naming it.
func TestEnvDefaults(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "yes": false, "true": false, "1": true} {
		t.Setenv(EnvNCCL, v)
		if NCCLDefault() != want {
			t.Errorf("DAINX_NCCL=%q: NCCL default %v, want %v", v, !want, want)
		}
	}
	for v, want := range map[string]int{"": 0, "0": 0, "3": 3} {
		t.Setenv(EnvDevice, v)
		if n, err := DeviceFromEnv(); err != nil || n != want {
			t.Errorf("DAINX_DEVICE=%q: %d, %v; want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"-1", "gpu0"} {
		t.Setenv(EnvDevice, v)
		if _, err := DeviceFromEnv(); err == nil || !strings.Contains(err.Error(), "DAINX_DEVICE") {
			t.Errorf("DAINX_DEVICE=%q: %v, want an error naming the variable", v, err)
		}
	}
}
