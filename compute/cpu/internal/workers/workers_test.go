package workers

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunParts: every part runs exactly once, part 0 on the caller, for
// part counts up to more than the CPUs, many times over (workers parked
// and spinning alike).
func TestRunParts(t *testing.T) {
	for rep := 0; rep < 200; rep++ {
		for parts := 1; parts <= 9; parts++ {
			counts := make([]atomic.Int32, parts)
			caller := -1
			Run(parts, func(p int) {
				counts[p].Add(1)
				if p == 0 {
					caller = p
				}
			})
			for p := range counts {
				if n := counts[p].Load(); n != 1 {
					t.Fatalf("rep %d, %d parts: part %d ran %d times", rep, parts, p, n)
				}
			}
			if caller != 0 {
				t.Fatalf("part 0 did not run on the caller")
			}
		}
		if rep%50 == 0 {
			time.Sleep(2 * time.Millisecond) // let the workers park
		}
	}
}

// TestRunConcurrentAndNested: Runs from several goroutines at once and
// Runs inside parts (which find the pool busy and spawn) all complete with
// every part run once.
func TestRunConcurrentAndNested(t *testing.T) {
	var total atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				Run(3, func(int) {
					Run(2, func(int) { total.Add(1) })
				})
			}
		}()
	}
	wg.Wait()
	if want := int64(4 * 300 * 3 * 2); total.Load() != want {
		t.Fatalf("%d parts ran, want %d", total.Load(), want)
	}
}

// TestRunPanic: a panic in part 0 reaches the caller after the other
// parts have finished, and the pool works afterwards.
func TestRunPanic(t *testing.T) {
	var finished atomic.Int32
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic from part 0")
			}
			if n := finished.Load(); n != 2 {
				t.Fatalf("%d of the 2 other parts had finished when the panic reached the caller", n)
			}
		}()
		Run(3, func(p int) {
			if p == 0 {
				panic("part 0")
			}
			time.Sleep(5 * time.Millisecond)
			finished.Add(1)
		})
	}()
	var ran atomic.Int32
	Run(3, func(int) { ran.Add(1) })
	if ran.Load() != 3 {
		t.Fatalf("after a panic, %d of 3 parts ran", ran.Load())
	}
}

// TestRunNoSpin: with spinning off, workers park at once, a Run blocks
// until its slower parts end (some parts sleep), and every part still runs
// exactly once.
func TestRunNoSpin(t *testing.T) {
	SetSpin(false)
	defer SetSpin(true)
	var total atomic.Int64
	for i := 0; i < 500; i++ {
		Run(3, func(p int) {
			if p == i%3 && i%5 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
			total.Add(1)
		})
	}
	if total.Load() != 1500 {
		t.Fatalf("%d parts ran, want 1500", total.Load())
	}
}
