// Package gitrev names the commit a benchmark command ran on, for its
// results file.
package gitrev

import (
	"bytes"
	"os/exec"
	"strings"
)

// Head returns the checkout's HEAD as `git rev-parse --short=12 HEAD`
// prints it, with "+dirty" when tracked files have uncommitted changes, or
// "unknown" when git cannot tell (no git, or not in a checkout). It runs
// git in the working directory.
func Head() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+dirty"
	}
	return c
}
