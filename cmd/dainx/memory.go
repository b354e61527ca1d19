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

// heapProfiler polls the collector and writes the heap profile to path
// whenever a collection left a larger live heap than every earlier one.
func heapProfiler(path string) {
	sample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	var seen, peak uint64
	for range time.Tick(20 * time.Millisecond) {
		metrics.Read(sample)
		if n := sample[0].Value.Uint64(); n == seen {
			continue
		} else {
			seen = n
		}
		if live := sample[1].Value.Uint64(); live > peak {
			peak = live
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintf(os.Stderr, "dainx: DAINX_HEAPPROFILE: %v\n", err)
				return
			}
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
}
