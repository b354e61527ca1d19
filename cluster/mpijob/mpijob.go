// Package mpijob runs dainx spread over the processes of an MPI job
// (dainx augment -dist mpi): the cluster.Cluster over MPI that the pipeline's collectives go
// through (with NCCL for device buffers when the caller asks for it, as
// dainx augment -nccl on does, and libnccl.so.2 is present; off by default
// until a GPU run verifies it), and
// the distributed reading of a tensor file, in which every rank reads its
// own byte range and the ranks agree the order, the line numbers, the dims
// and the duplicate cells.
package mpijob

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/mpi"
	"github.com/dainx/dainx/sampling"
	"github.com/dainx/dainx/tensor"
)

// Cluster is cluster.Cluster over an MPI communicator.
type Cluster struct {
	C *mpi.Comm
	// Device, if not nil, sums device buffers (NCCL); the dense gradients
	// then never leave the device.
	Device DeviceComm
}

// DeviceComm sums a backend's buffers on the device.
type DeviceComm interface {
	SumDevice(be compute.Backend, x compute.F32) (bool, error)
	Name() string
}

var _ cluster.Cluster = (*Cluster)(nil)

func (c *Cluster) Size() int            { return c.C.Size() }
func (c *Cluster) Rank() int            { return c.C.Rank() }
func (c *Cluster) SumF32(x []float32)   { c.C.Allreduce(x, mpi.Sum) }
func (c *Cluster) SumF64(x []float64)   { c.C.Allreduce(x, mpi.Sum) }
func (c *Cluster) SumI64(x []int64)     { c.C.Allreduce(x, mpi.Sum) }
func (c *Cluster) CommSeconds() float64 { return c.C.Stats().Elapsed.Seconds() }
func (c *Cluster) Oversubscribed() bool { return c.C.Oversubscribed() }

func (c *Cluster) GatherF32(x []float32) []float32 { out, _ := mpi.Allgatherv(c.C, x); return out }
func (c *Cluster) GatherI32(x []int32) []int32     { out, _ := mpi.Allgatherv(c.C, x); return out }
func (c *Cluster) GatherF64(x []float64) []float64 { out, _ := mpi.Allgatherv(c.C, x); return out }

func (c *Cluster) AlltoallvI32(dst, send, counts, recvCounts []int32) []int32 {
	return mpi.AlltoallvInto(c.C, dst, send, counts, recvCounts, false)
}

func (c *Cluster) AlltoallvF32(dst, send []float32, sendCounts, recvCounts []int32) []float32 {
	return mpi.AlltoallvInto(c.C, dst, send, sendCounts, recvCounts, true)
}

func (c *Cluster) AlltoallI32(send []int32, counts []int32) []int32 {
	out, _ := mpi.Alltoallv(c.C, send, counts)
	return out
}

// SumDevice sums x over the ranks on the device when a DeviceComm is set
// (cluster.DeviceSummer).
func (c *Cluster) SumDevice(be compute.Backend, x compute.F32) (bool, error) {
	if c.Device == nil {
		return false, nil
	}
	t0 := time.Now()
	ok, err := c.Device.SumDevice(be, x)
	_ = t0
	return ok, err
}

// Describe names the MPI library and the device exchange.
func (c *Cluster) Describe() string {
	s := fmt.Sprintf("%s, %s", c.C.ABI(), c.C.Version())
	if c.Device != nil {
		s += "; device buffers through " + c.Device.Name()
	} else {
		s += "; through host memory"
	}
	return s
}

// ErrReported is returned on every rank when the job failed and the rank
// that found the reason has printed it: the others have nothing to add.
var ErrReported = errors.New("dist: failed on another rank")

// Agree makes a failure on any rank a failure on every rank: err is this
// rank's error (nil if it succeeded) and key orders the failures (the
// lowest is reported; a global line number for bad input). It returns nil
// when every rank succeeded; otherwise this rank's err on the rank whose
// failure has the lowest key (the lowest rank among equal keys), and
// ErrReported on the others.
func Agree(c *mpi.Comm, err error, key int64) error {
	k := []int64{math.MaxInt64}
	if err != nil {
		k[0] = key
		if key == math.MaxInt64 {
			k[0] = math.MaxInt64 - 1
		}
	}
	c.Allreduce(k, mpi.Min)
	if k[0] == math.MaxInt64 {
		return nil
	}
	r := []int64{math.MaxInt64}
	if err != nil && (key == k[0] || (key == math.MaxInt64 && k[0] == math.MaxInt64-1)) {
		r[0] = int64(c.Rank())
	}
	c.Allreduce(r, mpi.Min)
	if int64(c.Rank()) == r[0] {
		return err
	}
	return ErrReported
}

// ReadOptions are the options of ReadText and ReadBin: the tensor's
// (format, index base) and the size of the rounds of the search for
// repeated cells.
type ReadOptions struct {
	tensor.ReadOptions
	// DupRound is the most cells a rank sends, on average, in one round
	// of the search for repeated cells (each about 44 bytes in the
	// exchange's buffers). 0, the zero value, is 2²¹ (about 90 MB of
	// buffers); a small value splits a small tensor into many rounds
	// (the tests' -dist mpi runs: cmd/dainx's TestMain sets it).
	DupRound int
}

// dupRound is o.DupRound, or its default when o leaves it 0.
func (o ReadOptions) dupRound() int {
	if o.DupRound > 0 {
		return o.DupRound
	}
	return 2 << 20
}

// ReadText reads this rank's share of the text tensor file at path (TSV or
// TNS, plain or gzip) and agrees it with the other ranks: the order is the
// file's first data line's, dims the largest index of each mode over all
// ranks plus one, and the cells are numbered in file order. Bad input is
// reported as Read would (file:line: reason, with the line counted over the
// whole file) by the rank that read it, and every rank returns an error
// (ErrReported on the others). A cell repeated anywhere in the file is found
// by its owner rank (cells are hash-partitioned) and reported with both
// lines. No rank holds more than its share of the cells.
func ReadText(c *mpi.Comm, path string, opt ReadOptions) (*dain.Shard, error) {
	rank, size := c.Rank(), c.Size()
	if opt.Format == tensor.BIN {
		return ReadBin(c, path, opt)
	}
	textSize, _, err := tensor.TextSize(path)
	if err := Agree(c, err, 0); err != nil {
		return nil, err
	}
	lo, hi := tensor.PartRange(textSize, rank, size)
	// The order: the first data line's, whichever rank holds it.
	o, err := tensor.FirstOrder(path, lo, hi)
	if err := Agree(c, err, 0); err != nil {
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
	part, perr := tensor.ReadPart(path, opt.ReadOptions, lo, hi, order)
	// Number every rank's lines: the lines of the ranges before this one.
	before := []int64{int64(part.Lines)}
	c.Exscan(before, mpi.Sum)
	key := int64(math.MaxInt64)
	var pe *tensor.ParseError
	if errors.As(perr, &pe) && pe.Line > 0 {
		pe.Line += int(before[0])
		key = int64(pe.Line)
	} else if perr != nil {
		key = 0 // not tied to a line: a read error, reported first
	}
	if err := Agree(c, perr, key); err != nil {
		return nil, err
	}
	nnz := []int64{int64(part.NNZ())}
	c.Allreduce(nnz, mpi.Sum)
	if nnz[0] == 0 {
		err := error(&tensor.ParseError{File: path, Msg: "no cells"})
		if rank != 0 {
			err = ErrReported
		}
		return nil, err
	}
	first := []int64{int64(part.NNZ())}
	c.Exscan(first, mpi.Sum)
	maxIdx := make([]int32, order)
	copy(maxIdx, part.MaxIdx)
	c.Allreduce(maxIdx, mpi.Max)
	dims := make([]int, order)
	for n, m := range maxIdx {
		dims[n] = int(m) + 1
	}
	lineOf := func(k int) int64 { return int64(int(before[0]) + part.LineOf(k)) }
	dupErr := func(line int64, cell []int32, first int64) error {
		return tensor.DuplicateError(part.Name, part.Base, int(line), cell, int(first))
	}
	if err := duplicates(c, part.Idx, part.NNZ(), dims, opt.dupRound(), lineOf, dupErr); err != nil {
		return nil, err
	}
	return &dain.Shard{Cells: &tensor.COO{Dims: dims, Idx: part.Idx, Val: part.Val}, First: int(first[0]), NNZ: int(nnz[0])}, nil
}

// ReadBin reads this rank's share of the plain SPLATT .bin file at path,
// cells [rank·nnz/P, (rank+1)·nnz/P) in file order, each rank seeking to
// its range of every column (tensor.ReadBinPart: no rank reads the whole
// file). Dims are the header's. Bad input is reported as Read reports it
// (the cell Read would meet first, numbered over the whole file) by the
// rank that holds it, and every rank returns an error (ErrReported on the
// others); a repeated cell is found by its owner rank and reported with
// both cell numbers.
func ReadBin(c *mpi.Comm, path string, opt ReadOptions) (*dain.Shard, error) {
	base, err := tensor.ResolveIndexBase(tensor.BIN, opt.IndexBase)
	if err := Agree(c, err, 0); err != nil {
		return nil, err
	}
	part, key, err := tensor.ReadBinPart(path, base, c.Rank(), c.Size())
	if err := Agree(c, err, key); err != nil {
		return nil, err
	}
	lineOf := func(k int) int64 { return int64(part.First + k) }
	dupErr := func(k int64, cell []int32, first int64) error {
		return tensor.BinDuplicateError(path, base, cell, int(first), int(k))
	}
	if err := duplicates(c, part.Idx, len(part.Val), part.Dims, opt.dupRound(), lineOf, dupErr); err != nil {
		return nil, err
	}
	return &dain.Shard{Cells: &tensor.COO{Dims: part.Dims, Idx: part.Idx, Val: part.Val}, First: part.First, NNZ: part.NNZ}, nil
}

// duplicates sends every one of this rank's nnz cells (idx, nnz×order),
// with its global line (lineOf: a text file's line, a .bin file's cell
// number), to its owner rank, in rounds of about dupRound cells a rank;
// the owner finds repeated cells; the earliest repeat in the file is
// reported as dupErr(line, cell, first line of the cell), as Read reports
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
		return Agree(c, err, 0)
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
	return Agree(c, err, bad)
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
