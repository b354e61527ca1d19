package mpijob

import (
	"errors"
	"strings"
	"testing"
)

// TestNCCLOffByDefault: off (the default, on false: dainx augment -nccl
// off, which $DAINX_NCCL=1 alone turns on, cmd/internal/cli.NCCLDefault)
// libnccl.so.2 is not even opened and the reason says how to turn it on;
// on, the library is opened. The package reads no environment: a set
// DAINX_NCCL changes nothing here.
func TestNCCLOffByDefault(t *testing.T) {
	defer func(old func(string, int) (uintptr, error)) { dlopen = old }(dlopen)
	var opened []string
	dlopen = func(name string, mode int) (uintptr, error) {
		opened = append(opened, name)
		return 0, errors.New("not here")
	}
	t.Setenv("DAINX_NCCL", "1")
	why := loadNCCL(&NCCL{}, false)
	if len(opened) != 0 || !strings.Contains(why, "off by default") || !strings.Contains(why, "-nccl on") || !strings.Contains(why, "DAINX_NCCL=1") {
		t.Errorf("off: opened %v, reason %q", opened, why)
	}
	if why := loadNCCL(&NCCL{}, true); len(opened) != 1 || opened[0] != ncclLibrary || !strings.Contains(why, "no NCCL: not here") {
		t.Errorf("on: opened %v, reason %q", opened, why)
	}
}

// TestShareGPUs: NCCL is refused up front when a node runs more ranks than
// it has GPUs, and allowed otherwise (or when the count is unknown: the
// set-up itself then decides).
func TestShareGPUs(t *testing.T) {
	gpus := func(n int) func() (int, error) { return func() (int, error) { return n, nil } }
	for _, c := range []struct {
		local, gpus int
		refused     bool
	}{{1, 1, false}, {2, 1, true}, {2, 2, false}, {4, 8, false}, {9, 8, true}} {
		why := shareGPUs(c.local, gpus(c.gpus))
		if (why != "") != c.refused || (c.refused && !strings.Contains(why, "one GPU per rank")) {
			t.Errorf("%d ranks, %d GPUs: %q, want refused %v", c.local, c.gpus, why, c.refused)
		}
	}
	if why := shareGPUs(2, func() (int, error) { return 0, errors.New("no driver") }); why != "" {
		t.Errorf("no driver: %q, want no refusal here", why)
	}
}
