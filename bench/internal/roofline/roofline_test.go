package roofline

import (
	"math"
	"testing"
	"time"
)

// TestPlace: the derived rates and the bound follow from the numbers: a
// stage of intensity below the machine balance is memory-bound and its
// fraction is of the bandwidth, one above it compute-bound and of the
// peak; a stage with no modelled bytes has no bound.
func TestPlace(t *testing.T) {
	m := Machine{PeakGFLOPS: 100, TriadGBps: 10} // balance 10 FLOP/byte
	lo := Stage{Cells: 1e6, Seconds: 2, Flops: 4e9, Bytes: 8e9}
	lo.Place(m)
	if lo.CellsPerS != 5e5 || lo.GFLOPS != 2 || lo.GBps != 4 || lo.FlopPerCell != 4000 || lo.BytePerCell != 8000 || lo.Intensity != 0.5 {
		t.Fatalf("derived %+v", lo)
	}
	if lo.Bound != "memory" || lo.OfBound != 0.4 || lo.OfPeak != 0.02 || lo.OfBandwidth != 0.4 {
		t.Fatalf("memory-bound stage: %+v", lo)
	}
	hi := Stage{Cells: 1e6, Seconds: 1, Flops: 50e9, Bytes: 1e9}
	hi.Place(m)
	if hi.Bound != "compute" || math.Abs(hi.OfBound-0.5) > 1e-12 {
		t.Fatalf("compute-bound stage: %+v", hi)
	}
	none := Stage{Cells: 10, Seconds: 1}
	none.Place(m)
	if none.Bound != "" || none.CellsPerS != 10 {
		t.Fatalf("unmodelled stage: %+v", none)
	}
	if (Machine{}).Balance() != 0 || m.Balance() != 10 {
		t.Fatal("balance")
	}
}

// TestMeasure: a short measurement gives positive bandwidths (copy and
// triad within a factor of 10 of each other) and, with AVX2, a peak.
func TestMeasure(t *testing.T) {
	m := Measure(1, 50*time.Millisecond, 8)
	if !(m.CopyGBps > 0.1 && m.TriadGBps > 0.1) || m.CopyGBps > 10*m.TriadGBps || m.TriadGBps > 10*m.CopyGBps {
		t.Fatalf("bandwidth: %+v", m)
	}
	if m.ISA != "" && !(m.PeakGFLOPS > 1) {
		t.Fatalf("peak: %+v", m)
	}
	t.Logf("%+v", m)
}
