package bigmem

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestMake: the slice has the asked length and capacity and is zeroed, at
// sizes below and above the threshold.
func TestMake(t *testing.T) {
	for _, n := range []int{0, 1, 1000, Threshold/4 + 3} {
		s := Make[int32](n)
		if len(s) != n || cap(s) != n {
			t.Fatalf("Make(%d): len %d cap %d", n, len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("Make(%d)[%d] = %d", n, i, v)
			}
		}
		u := Make[float64](n/2, n+5)
		if len(u) != n/2 || cap(u) != n+5 {
			t.Fatalf("Make(%d, %d): len %d cap %d", n/2, n+5, len(u), cap(u))
		}
	}
}

// TestHugePages: with transparent huge pages in "madvise" or "always"
// mode, the 2 MiB-aligned part of a large slice made by Make lies in a
// mapping that the kernel marks for huge pages (VmFlags "hg" in
// /proc/self/smaps).
func TestHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") && !strings.Contains(string(mode), "[always]") {
		t.Skipf("transparent huge pages not in madvise or always mode (%q, %v)", mode, err)
	}
	big := Make[byte](64 << 20)
	at := (uintptr(unsafe.Pointer(&big[0])) + 4<<20) &^ (2<<20 - 1)
	flags, err := vmFlags(at)
	if err != nil {
		t.Skip(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the mapping of a %d-byte slice at %#x has VmFlags %q: no hg", len(big), at, flags)
	}
	runtime.KeepAlive(big)
}

// vmFlags returns the VmFlags line of the mapping of /proc/self/smaps that
// holds address a.
func vmFlags(a uintptr) (string, error) {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(a) >= l && uint64(a) < h
				continue
			}
		}
		if in && f[0] == "VmFlags:" {
			return strings.Join(f[1:], " "), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %#x", a)
}
