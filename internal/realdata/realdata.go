// Package realdata locates the real tensors that tests and benchmarks use
// (the shared data folder beside the repository, described in its
// README.md). Nothing here is needed at run time.
package realdata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the directory holding the real tensors: $DAINX_DATA if set,
// otherwise ../shared/data beside the repository root (the directory with
// go.mod above the working directory).
func Dir() string {
	if d := os.Getenv("DAINX_DATA"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "data")
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Path returns the path of the named real tensor, or skips tb with a message
// saying where it was looked for when the file is absent.
func Path(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(Dir(), name)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("real tensor %s not available (%v); set DAINX_DATA to the directory holding it", name, err)
	}
	return p
}
