// Package memlimit says how much memory a command may still allocate and
// refuses a configuration whose estimated bytes exceed it, before the
// allocation that would have ended the process with Go's "out of memory"
// (issue 46: settings within their caps whose product cannot fit).
//
// The limit is the smallest of what the operating system says is left:
// MemAvailable of /proc/meminfo (Linux), the cgroup's memory.max less its
// memory.current (cgroup v2), and the address-space limit RLIMIT_AS
// (`ulimit -v`) less the process's current virtual size. Each is read
// where it exists; where none does, there is no limit (0 from Available).
// A user's -max-memory replaces it.
package memlimit

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/dustin/go-humanize"
)

// Available returns the bytes this process may still allocate, by the
// smallest of the limits in the package documentation, or 0 when none is
// known (no limit).
func Available() int64 {
	best := int64(0)
	take := func(v int64) {
		if v > 0 && (best == 0 || v < best) {
			best = v
		}
	}
	if kb := meminfo("MemAvailable:"); kb > 0 {
		take(kb << 10)
	}
	if max, cur := cgroupFile("memory.max"), cgroupFile("memory.current"); max > 0 {
		take(max - cur)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err == nil && rl.Cur != math.MaxUint64 && rl.Cur < math.MaxInt64 {
		vm := status("VmSize:") << 10
		take(max(int64(rl.Cur)-vm, 1))
	}
	return best
}

// meminfo returns the value in kB of key in /proc/meminfo, or 0.
func meminfo(key string) int64 { return procField("/proc/meminfo", key) }

// status returns the value in kB of key in /proc/self/status, or 0.
func status(key string) int64 { return procField("/proc/self/status", key) }

func procField(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == key {
			v, _ := strconv.ParseInt(fs[1], 10, 64)
			return v
		}
	}
	return 0
}

// cgroupFile returns the number in name of this process's cgroup v2
// directory, or 0 (absent, or "max").
func cgroupFile(name string) int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("0::")); ok {
			v, err := os.ReadFile("/sys/fs/cgroup" + string(rest) + "/" + name)
			if err != nil {
				return 0
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
			return n
		}
	}
	return 0
}

// Limit returns the limit a command runs under: max when it is > 0 (the
// user's -max-memory), else Available(); 0 means none.
func Limit(max int64) int64 {
	if max > 0 {
		return max
	}
	return Available()
}

// Part is one item of an estimate: what holds the memory, the flags or
// the input that size it, and its bytes.
type Part struct {
	What, Flags string
	Bytes       float64
}

// Check returns nil when the parts' sum fits limit (0: no limit), else an
// error of one line: "<what> needs about X (…), more than the Y this
// process may use (-max-memory …)", the largest part first with the
// flags that size it. max is the user's -max-memory (0 when not given).
func Check(what string, parts []Part, limit, max int64) error {
	total := 0.0
	big := -1
	for i, p := range parts {
		total += p.Bytes
		if big < 0 || p.Bytes > parts[big].Bytes {
			big = i
		}
	}
	if limit <= 0 || total <= float64(limit) {
		return nil
	}
	why := "what the system says is available; -max-memory sets another limit"
	if max > 0 {
		why = "-max-memory " + Text(float64(max))
	}
	p := parts[big]
	flags := ""
	if p.Flags != "" {
		flags = " (" + p.Flags + ")"
	}
	return fmt.Errorf("%s needs about %s, more than the %s this process may use (%s); the largest part is %s%s at %s", what, Text(total), Text(float64(limit)), why, p.What, flags, Text(p.Bytes))
}

// Text formats bytes for a message, in binary units ("2.5 GiB"), and
// "more than 1 EiB" past what int64 counts.
func Text(b float64) string {
	if !(b < 1<<60) {
		return fmt.Sprintf("%.3g EiB", b/(1<<60))
	}
	return humanize.IBytes(uint64(b))
}

// Bytes is a size in bytes given on the command line (-max-memory): a
// number with an optional unit, "8GiB", "500MB", "2G" (humanize's
// ParseBytes: SI and binary units), or 0 / "auto" for no setting. Its
// pointer is a flag.Value.
type Bytes int64

// String formats b as the flag takes it ("auto" for 0).
func (b *Bytes) String() string {
	if b == nil || *b == 0 {
		return "auto"
	}
	return humanize.IBytes(uint64(*b))
}

// Set parses s.
func (b *Bytes) Set(s string) error {
	if s == "auto" || s == "0" {
		*b = 0
		return nil
	}
	v, err := humanize.ParseBytes(s)
	if err != nil || v == 0 || v > math.MaxInt64 {
		return fmt.Errorf("want a size such as 8GiB, 500MB or 2G, or auto")
	}
	*b = Bytes(v)
	return nil
}
