package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// gcPercent is the garbage collector's target heap growth that dainx sets
// when GOGC is not in the environment. Go's default (100) lets the heap grow
// to twice what was live after the last collection before collecting
// again, so a run on a large tensor could hold up to twice its live memory.
// dainx's heap is a few large slices without pointers (cells, values,
// buffers), which a collection does not scan, so collecting more often
// costs little: at 20 the heap stays within 1.2× the live bytes.
const gcPercent = 20

// setupMemory sets the collector's target (unless GOGC says otherwise)
// and, when DAINX_HEAPPROFILE names a file, starts the heap profiler
// (a hidden hook for measuring memory): after every collection that
// leaves more live heap than any before, the profile is written to that
// file, so it ends as the profile of the run's largest live heap.
func setupMemory() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if path := os.Getenv("DAINX_HEAPPROFILE"); path != "" {
		runtime.MemProfileRate = 64 << 10
		go heapProfiler(path)
	}
}

// startCPUProfile starts the CPU profiler when DAINX_CPUPROFILE names a
// file (a hook for finding where a command's time goes, as go tool pprof
// reads it) and returns what stops it and closes the file; a no-op
// without the variable. A file that cannot be created is said on
// standard error and the command runs without a profile.
func startCPUProfile() (stop func()) {
	path := os.Getenv("DAINX_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dainx: DAINX_CPUPROFILE: %v\n", err)
		if f != nil {
			f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// heapProfiler polls the collector and the process's RSS every 20 ms. It
// writes the heap profile to path whenever a collection left a larger live
// heap than every earlier one, and to path+".rss" whenever the RSS passed
// its largest so far by 4 MiB, with the runtime's account of that memory
// (live heap, heap in use and free, released, stacks, other) in
// path+".rss.txt" and the process's mappings (/proc/self/smaps, Linux) in
// path+".smaps": so the files end as the profiles of the run's largest
// live heap and of its peak RSS.
func heapProfiler(path string) {
	sample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/memory/classes/total:bytes"}}
	var seen, peak, peakRSS uint64
	write := func(name string) bool {
		f, err := os.Create(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dainx: DAINX_HEAPPROFILE: %v\n", err)
			return false
		}
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
		return true
	}
	for range time.Tick(20 * time.Millisecond) {
		metrics.Read(sample)
		if rss := currentRSS(); rss > peakRSS+4<<20 {
			peakRSS = rss
			if !write(path + ".rss") {
				return
			}
			mib := func(i int) float64 { return float64(sample[i].Value.Uint64()) / (1 << 20) }
			line := fmt.Sprintf("rss %.1f MiB: live heap %.1f, heap objects %.1f, heap free %.1f, released %.1f, unused %.1f, stacks %.1f, runtime total %.1f MiB\n",
				float64(rss)/(1<<20), mib(1), mib(2), mib(3), mib(4), mib(5), mib(6), mib(7))
			os.WriteFile(path+".rss.txt", []byte(line), 0o644)
			if b, err := os.ReadFile("/proc/self/smaps"); err == nil {
				os.WriteFile(path+".smaps", b, 0o644)
			}
		}
		if n := sample[0].Value.Uint64(); n == seen {
			continue
		} else {
			seen = n
		}
		if live := sample[1].Value.Uint64(); live > peak {
			peak = live
			if !write(path) {
				return
			}
		}
	}
}

// currentRSS returns the process's resident set in bytes (Linux; 0
// elsewhere).
func currentRSS() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res uint64
	fmt.Sscan(string(b), &size, &res)
	return res * uint64(os.Getpagesize())
}
