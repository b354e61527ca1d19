// Package version gives dainx's version: the release number Base, plus the
// commit the program was built from, the same string in `dainx version`,
// dainx_version() of the C library, the Python package and every report
// and saved model.
package version

import (
	"runtime/debug"
)

// Base is the release number of this source tree.
const Base = "0.7.0"

// Stamp, when set at link time (go build -ldflags "-X
// github.com/dainx/dainx/internal/version.Stamp=0.7.0+abc123"), is the
// whole version string.
var Stamp string

// String returns the version: Stamp when set, else Base+"+"+the first 12
// hex digits of the build's VCS revision (with ".dirty" when the tree had
// changes), else Base+"+unknown" (a build without VCS information: go test
// binaries, or builds with -buildvcs=false). Never "(devel)".
func String() string {
	if Stamp != "" {
		return Stamp
	}
	return Base + "+" + Commit()
}

// Commit returns the build's VCS revision (12 hex digits, ".dirty" when
// modified), or "unknown".
func Commit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += ".dirty"
	}
	return rev
}
