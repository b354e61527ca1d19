package tensor

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// benchFiles are the inputs of the read benchmarks: $DAINX_BENCH_TSV if set
// (e.g. a 500 MB file from "dainx synth -dims 100000,50000,1000 -nnz
// 15000000"), else a synthetic tensor of 2M cells of the same shape written
// once per run; its .bin twin is written next to it (or into the temporary
// directory).
var benchFiles = sync.OnceValues(func() (string, string) {
	dir, err := os.MkdirTemp("", "dainx-bench-")
	if err != nil {
		panic(err)
	}
	tsv := os.Getenv("DAINX_BENCH_TSV")
	if tsv == "" {
		tsv = filepath.Join(dir, "bench.tsv")
		t, err := Synthetic([]int{100000, 50000, 1000}, 2000000, 10, 0, 1)
		if err != nil {
			panic(err)
		}
		if err := WriteFile(tsv, t, WriteOptions{Format: TSV, IndexBase: -1}); err != nil {
			panic(err)
		}
	}
	t, err := ReadFile(tsv, ReadOptions{Format: FormatOf(tsv), IndexBase: -1})
	if err != nil {
		panic(err)
	}
	bin := filepath.Join(dir, "bench.bin")
	if err := WriteFile(bin, t, WriteOptions{Format: BIN, IndexBase: -1}); err != nil {
		panic(err)
	}
	return tsv, bin
})

func benchRead(b *testing.B, path string, opt ReadOptions) {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	for b.Loop() {
		t, err := ReadFile(path, opt)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(t.NNZ()), "cells")
	}
}

// BenchmarkReadText reads the benchmark TSV with the serial and the
// parallel parser (MB/s is text bytes per second, duplicate check
// included).
func BenchmarkReadText(b *testing.B) {
	tsv, _ := benchFiles()
	b.Run("serial", func(b *testing.B) {
		benchRead(b, tsv, ReadOptions{Format: TSV, IndexBase: -1, serial: true})
	})
	b.Run("parallel", func(b *testing.B) {
		benchRead(b, tsv, ReadOptions{Format: TSV, IndexBase: -1})
	})
}

// BenchmarkReadBin reads the .bin twin of the benchmark TSV (MB/s is .bin
// bytes per second, duplicate check included).
func BenchmarkReadBin(b *testing.B) {
	_, bin := benchFiles()
	benchRead(b, bin, ReadOptions{Format: BIN, IndexBase: -1})
}
