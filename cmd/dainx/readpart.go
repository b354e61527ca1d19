package main

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dainx/dainx/cluster/mpijob"
	"github.com/dainx/dainx/internal/demo"
	"github.com/dainx/dainx/mpi"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// This file reads the input of a run spread over the ranks of an MPI job
// (-dist mpi): every rank reads its own byte range of a text file (or its
// range of a .bin file's cells) and the ranks agree the order, the line
// numbers, the dims and the repeated cells, so that no rank holds more
// than its share of the cells and bad input is reported as one process's
// tensor.Read reports it.

// dupRound is readOptions.DupRound: 0, its default, except in the
// MPI tests, whose test code (an init in mpi_test.go) sets it from
// $DAINX_TEST_DUP_ROUND in the ranks it starts (the search for repeated
// cells in many rounds on a small tensor).
var dupRound int

// readPart reads this rank's share of the input: its byte range of a file,
// or its slice of the embedded demo tensor.
func readPart(c *mpi.Comm, in *inputFlags) (*tensor.Part, string, tensor.Format, error) {
	var format tensor.Format
	if in.Format != "" {
		v, err := tensor.ParseFormat(in.Format)
		if err != nil {
			return nil, "", 0, fmt.Errorf("%w: -format: %v", errUsage, err)
		}
		format = v
	} else if in.Input != "" {
		format = tensor.FormatOf(in.Input)
	}
	if in.Input == "" {
		t, err := demo.Read()
		if err != nil {
			return nil, "", 0, err
		}
		lo, hi := c.Rank()*t.NNZ()/c.Size(), (c.Rank()+1)*t.NNZ()/c.Size()
		rows := make([]int, hi-lo)
		for i := range rows {
			rows[i] = lo + i
		}
		return &tensor.Part{Cells: t.Subset(rows), First: lo, NNZ: t.NNZ()}, demoName, tensor.TSV, nil
	}
	sh, err := readText(c, in.Input, readOptions{ReadOptions: tensor.ReadOptions{Format: format, IndexBase: in.IndexBase}, DupRound: dupRound})
	return sh, in.Input, format, err
}

// readOptions are the options of readText and readBin: the tensor's
// (format, index base) and the size of the rounds of the search for
// repeated cells.
type readOptions struct {
	tensor.ReadOptions
	// DupRound is the most cells a rank sends, on average, in one round
	// of the search for repeated cells (each about 44 bytes in the
	// exchange's buffers). 0, the zero value, is 2²¹ (about 90 MB of
	// buffers); a small value splits a small tensor into many rounds
	// (the tests' -dist mpi runs: dupRound).
	DupRound int
}

// round is o.DupRound, or its default when o leaves it 0.
func (o readOptions) round() int {
	if o.DupRound > 0 {
		return o.DupRound
	}
	return 2 << 20
}

// readText reads this rank's share of the text tensor file at path (TSV or
// TNS, plain or gzip) and agrees it with the other ranks: the order is the
// file's first data line's, dims the largest index of each mode over all
// ranks plus one, and the cells are numbered in file order. Bad input is
// reported as tensor.Read would (file:line: reason, with the line counted over the
// whole file) by the rank that read it, and every rank returns an error
// (mpijob.ErrReported on the others). A cell repeated anywhere in the file is found
// by its owner rank (cells are hash-partitioned) and reported with both
// lines. No rank holds more than its share of the cells.
func readText(c *mpi.Comm, path string, opt readOptions) (*tensor.Part, error) {
	rank, size := c.Rank(), c.Size()
	if opt.Format == tensor.BIN {
		return readBin(c, path, opt)
	}
	textSize, _, err := tensor.TextSize(path)
	if err := mpijob.Agree(c, err, 0); err != nil {
		return nil, err
	}
	lo, hi := tensor.PartRange(textSize, rank, size)
	// The order: the first data line's, whichever rank holds it.
	o, err := tensor.FirstOrder(path, lo, hi)
	if err := mpijob.Agree(c, err, 0); err != nil {
		return nil, err
	}
	orders := mpi.Allgather(c, []int64{int64(o)})
	order := 0
	for _, v := range orders {
		if v != 0 {
			order = int(v)
			break
		}
	}
	if order < 0 {
		order = 0 // that rank's parse reports the line
	}
	base, err := tensor.ResolveIndexBase(opt.Format, opt.IndexBase)
	if err := mpijob.Agree(c, err, 0); err != nil {
		return nil, err
	}
	part, lines, perr := tensor.ReadPart(path, opt.ReadOptions, lo, hi, order)
	// Number every rank's lines: the lines of the ranges before this one.
	before := []int64{int64(lines.N)}
	c.Exscan(before, mpi.Sum)
	key := int64(math.MaxInt64)
	var pe *tensor.ParseError
	if errors.As(perr, &pe) && pe.Line > 0 {
		pe.Line += int(before[0])
		key = int64(pe.Line)
	} else if perr != nil {
		key = 0 // not tied to a line: a read error, reported first
	}
	if err := mpijob.Agree(c, perr, key); err != nil {
		return nil, err
	}
	nnz := []int64{int64(part.NNZ)}
	c.Allreduce(nnz, mpi.Sum)
	if nnz[0] == 0 {
		err := error(&tensor.ParseError{File: path, Msg: "no cells"})
		if rank != 0 {
			err = mpijob.ErrReported
		}
		return nil, err
	}
	first := []int64{int64(part.NNZ)}
	c.Exscan(first, mpi.Sum)
	// The dims: one more than the largest index of each mode over the
	// ranks (a part's Dims are its own largest indices plus one).
	maxIdx := make([]int32, order)
	for n := range min(order, len(part.Cells.Dims)) {
		maxIdx[n] = int32(part.Cells.Dims[n] - 1)
	}
	c.Allreduce(maxIdx, mpi.Max)
	dims := make([]int, order)
	for n, m := range maxIdx {
		dims[n] = int(m) + 1
	}
	lineOf := func(k int) int64 { return int64(int(before[0]) + lines.LineOf(k)) }
	dupErr := func(line int64, cell []int32, first int64) error {
		return tensor.DuplicateError(path, base, int(line), cell, int(first))
	}
	if err := duplicates(c, part.Cells.Idx, part.Cells.NNZ(), dims, opt.round(), lineOf, dupErr); err != nil {
		return nil, err
	}
	part.Cells.Dims, part.First, part.NNZ = dims, int(first[0]), int(nnz[0])
	return part, nil
}

// readBin reads this rank's share of the plain SPLATT .bin file at path,
// cells [rank·nnz/P, (rank+1)·nnz/P) in file order, each rank seeking to
// its range of every column (tensor.ReadBinPart: no rank reads the whole
// file). Dims are the header's. Bad input is reported as tensor.Read reports it
// (the cell tensor.Read would meet first, numbered over the whole file) by the
// rank that holds it, and every rank returns an error (mpijob.ErrReported on the
// others); a repeated cell is found by its owner rank and reported with
// both cell numbers.
func readBin(c *mpi.Comm, path string, opt readOptions) (*tensor.Part, error) {
	base, err := tensor.ResolveIndexBase(tensor.BIN, opt.IndexBase)
	if err := mpijob.Agree(c, err, 0); err != nil {
		return nil, err
	}
	part, key, err := tensor.ReadBinPart(path, base, c.Rank(), c.Size())
	if err := mpijob.Agree(c, err, key); err != nil {
		return nil, err
	}
	lineOf := func(k int) int64 { return int64(part.First + k) }
	dupErr := func(k int64, cell []int32, first int64) error {
		return tensor.BinDuplicateError(path, base, cell, int(first), int(k))
	}
	if err := duplicates(c, part.Cells.Idx, part.Cells.NNZ(), part.Cells.Dims, opt.round(), lineOf, dupErr); err != nil {
		return nil, err
	}
	return part, nil
}

// duplicates sends every one of this rank's nnz cells (idx, nnz×order),
// with its global line (lineOf: a text file's line, a .bin file's cell
// number), to its owner rank, in rounds of about dupRound cells a rank;
// the owner finds repeated cells; the earliest repeat in the file is
// reported as dupErr(line, cell, first line of the cell), as tensor.Read reports
// it.
func duplicates(c *mpi.Comm, idx []int32, nnz int, dims []int, dupRound int, lineOf func(k int) int64, dupErr func(line int64, cell []int32, first int64) error) error {
	size, order := c.Size(), len(dims)
	if size == 1 {
		// One rank owns every cell: the search one process does, without
		// the exchange's copies of every cell.
		var err error
		if k, first, found := tensor.FindDuplicate(dims, idx, nnz); found {
			err = dupErr(lineOf(k), idx[k*order:(k+1)*order], lineOf(first))
		}
		return mpijob.Agree(c, err, 0)
	}
	rec := order + 2 // indices, then the line as two int32 halves
	// The cells go to their owners in rounds of at most dupRound cells a
	// rank (on average): a cell's round is its hash's quotient by the
	// ranks, so the copies of a cell meet in one round at one owner, and
	// the exchange's buffers (about 44 bytes a cell) do not grow with the
	// tensor.
	rounds := []int64{int64((nnz + dupRound - 1) / dupRound)}
	c.Allreduce(rounds, mpi.Max)
	R := int(max(rounds[0], 1))
	bad, firstLine := int64(math.MaxInt64), int64(0)
	var badCell []int32
	counts, next := make([]int32, size), make([]int32, size)
	for round := 0; round < R; round++ {
		clear(counts)
		for k := 0; k < nnz; k++ {
			h := sampling.Owner(idx[k*order:(k+1)*order], size*R)
			if h/size == round {
				counts[h%size] += int32(rec)
			}
		}
		total := int32(0)
		for r := range next {
			next[r] = total
			total += counts[r]
		}
		send := make([]int32, total)
		for k := 0; k < nnz; k++ {
			h := sampling.Owner(idx[k*order:(k+1)*order], size*R)
			if h/size != round {
				continue
			}
			r := h % size
			at := send[next[r]:]
			copy(at, idx[k*order:(k+1)*order])
			line := lineOf(k)
			at[order], at[order+1] = int32(line>>31), int32(line&(1<<31-1))
			next[r] += int32(rec)
		}
		recv, _ := mpi.Alltoallv(c, send, counts)
		send = nil
		if l, first, cell := earliestRepeat(recv, order); l < bad {
			bad, firstLine, badCell = l, first, cell
		}
	}
	var err error
	if badCell != nil {
		err = dupErr(bad, badCell, firstLine)
	}
	return mpijob.Agree(c, err, bad)
}

// earliestRepeat returns, of the records in recv (order indices and a
// line as two int32 halves each), the earliest line whose cell an earlier
// line holds, with that cell's first line and the cell; line MaxInt64
// when no cell repeats.
func earliestRepeat(recv []int32, order int) (bad, firstLine int64, cell []int32) {
	rec := order + 2
	n := len(recv) / rec
	bad = math.MaxInt64
	line := func(i int) int64 { return int64(recv[i*rec+order])<<31 | int64(recv[i*rec+order+1]) }
	ord := make([]int32, n)
	for i := range ord {
		ord[i] = int32(i)
	}
	less := func(a, b int) int {
		x, y := recv[a*rec:a*rec+order], recv[b*rec:b*rec+order]
		for m := range x {
			if x[m] != y[m] {
				if x[m] < y[m] {
					return -1
				}
				return 1
			}
		}
		la, lb := line(a), line(b)
		switch {
		case la < lb:
			return -1
		case la > lb:
			return 1
		}
		return 0
	}
	sort.Slice(ord, func(i, j int) bool { return less(int(ord[i]), int(ord[j])) < 0 })
	// The earliest line that repeats a cell, and the cell's first line.
	badAt := -1
	for i := 1; i < n; i++ {
		a, b := int(ord[i-1]), int(ord[i])
		same := true
		for m := 0; m < order; m++ {
			if recv[a*rec+m] != recv[b*rec+m] {
				same = false
				break
			}
		}
		if !same {
			continue
		}
		// b repeats the cell; the first line of the cell is the group's first.
		j := i - 1
		for j > 0 {
			p := int(ord[j-1])
			eq := true
			for m := 0; m < order; m++ {
				if recv[p*rec+m] != recv[b*rec+m] {
					eq = false
					break
				}
			}
			if !eq {
				break
			}
			j--
		}
		if l := line(b); l < bad {
			bad, firstLine, badAt = l, line(int(ord[j])), b
		}
	}
	if badAt >= 0 {
		cell = append([]int32(nil), recv[badAt*rec:badAt*rec+order]...)
	}
	return bad, firstLine, cell
}
