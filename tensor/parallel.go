package tensor

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/dainx/dainx/internal/outtx"
)

// Group is the processes that write one file together (WriteFileParallel),
// such as the ranks of an MPI communicator. Its methods are collective:
// every member calls them the same number of times, in the same order.
type Group interface {
	Rank() int
	Size() int
	// SumI64 replaces x by its element-wise sum over the members.
	SumI64(x []int64)
}

// ErrOtherRank is returned by WriteFileParallel on the members that
// failed nothing themselves when another member failed; that member
// returns its own error.
var ErrOtherRank = errors.New("another process failed to write its part")

// WriteFileParallel writes, with every member of g calling it, the file
// WriteFile would write for the concatenation of the members' parts in
// rank order: part is this member's cells, and every part has the same
// Dims. Each member formats and writes its own cells only, at offsets
// found by an exclusive scan of the members' byte counts, so memory and
// work per member scale with its part. Like WriteFile it is atomic: rank 0
// creates a temporary file in path's directory, every member writes its
// ranges into it and syncs it, and only when every member succeeded does
// rank 0 rename it over path; on any failure no file at path is created or
// changed and the temporary file is removed.
//
// The bytes are WriteFile's exactly, except that a gzip-compressed path
// (".gz") holds one gzip member per member's range (per section and member
// for BIN): a valid gzip file that decompresses (gzip -d, Go's
// gzip.Reader) to WriteFile's uncompressed bytes (for text with one
// member, WriteFile's file byte for byte). A path that exists and is not a regular file
// (/dev/null, a named pipe) is written in place, the members taking turns
// in file order.
//
// Every member returns nil, or an error: a member's own failure (invalid
// part, dims that differ between members, a write error) is returned by
// that member, and ErrOtherRank (wrapped, naming path) by the others.
func WriteFileParallel(path string, part *COO, opt WriteOptions, g Group) error {
	_, err := writeParallel(path, part, opt, g, true)
	return err
}

// StageFileParallel is WriteFileParallel without its final rename: the
// members write the file into a temporary file beside path and every
// member returns its name (rank 0 made it), for a caller that commits it
// with its other outputs (internal/outtx.File.Adopt on rank 0) or removes
// it. A path that exists and is not a regular file is written in place,
// and the name returned is then "". Errors are WriteFileParallel's, and on
// any error no temporary file is left.
func StageFileParallel(path string, part *COO, opt WriteOptions, g Group) (string, error) {
	return writeParallel(path, part, opt, g, false)
}

// writeParallel is WriteFileParallel (commit) or StageFileParallel.
func writeParallel(path string, part *COO, opt WriteOptions, g Group, commit bool) (string, error) {
	rank, size := g.Rank(), g.Size()
	base, err := ResolveIndexBase(opt.Format, opt.IndexBase)
	if err == nil {
		err = part.Validate()
	}
	// The members agree on the dims (their order, then every size), the
	// total number of cells and whether any value needs 8 bytes in BIN.
	n := len(part.Dims)
	head := []int64{int64(n), int64(n) * int64(n), int64(part.NNZ()), 0, 0}
	if err != nil {
		head[3] = 1
	}
	if opt.Format == BIN && err == nil && binValueWidth(part) == 8 {
		head[4] = 1
	}
	g.SumI64(head)
	if err == nil && head[0]*head[0] != head[1]*int64(size) {
		err = fmt.Errorf("tensor: the parts of %s have different orders", path)
	}
	if err != nil || head[3] > 0 || head[0]*head[0] != head[1]*int64(size) {
		return "", groupErr(path, err)
	}
	dims := make([]int64, 2*n)
	for i, d := range part.Dims {
		dims[i], dims[n+i] = int64(d), int64(d)*int64(d)
	}
	g.SumI64(dims)
	for i, d := range part.Dims {
		// Σd = P·d and Σd² = P·d² hold only if every member has d.
		if dims[i] != int64(size)*int64(d) || dims[n+i] != int64(size)*int64(d)*int64(d) {
			err = fmt.Errorf("tensor: the parts of %s have different dims (mode %d: %d here)", path, i+1, d)
		}
	}
	if err := agree(g, path, err); err != nil {
		return "", err
	}
	nnz := int(head[2])

	// This member's pieces, one per section of the file: text has one
	// section; BIN has the header (rank 0's), then a section per mode and
	// one for the values.
	gz := strings.HasSuffix(strings.ToLower(path), ".gz")
	type piece struct {
		size  int64
		write func(w io.Writer) error
	}
	var pieces []piece
	if opt.Format == BIN {
		iw, vw := binIndexWidth(nnz), 4
		if head[4] > 0 {
			vw = 8
		}
		hdr := binHeader(part.Dims, nnz, iw, vw)
		if rank != 0 {
			hdr = nil
		}
		pieces = append(pieces, piece{int64(len(hdr)), func(w io.Writer) error { _, err := w.Write(hdr); return err }})
		for s := 1; s <= n+1; s++ {
			width := iw
			if s == n+1 {
				width = vw
			}
			pieces = append(pieces, piece{int64(part.NNZ() * width), func(w io.Writer) error {
				return writeBinSection(w, part, s, base, iw, vw)
			}})
		}
	} else {
		var c countWriter
		if err := write(&c, part, opt.Format, base); err != nil {
			return "", agree(g, path, err)
		}
		pieces = append(pieces, piece{c.n, func(w io.Writer) error { return write(w, part, opt.Format, base) }})
	}
	if gz {
		// A gzip member's size is known once it is compressed: each piece
		// is compressed in memory (a fraction of its text).
		for i, p := range pieces {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			if err := p.write(zw); err != nil {
				return "", agree(g, path, err)
			}
			if err := zw.Close(); err != nil {
				return "", agree(g, path, err)
			}
			if len(pieces) > 1 && p.size == 0 && !(i == 0 && rank == 0) {
				b.Reset() // a BIN section with no cells here: no member
			}
			pieces[i] = piece{int64(b.Len()), func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err }}
		}
	}
	if err := agree(g, path, nil); err != nil {
		return "", err
	}

	// Offsets: section-major, then rank.
	S := len(pieces)
	sizes := make([]int64, S*size)
	for s, p := range pieces {
		sizes[s*size+rank] = p.size
	}
	g.SumI64(sizes)
	offs := make([]int64, S)
	var total int64
	for i, sz := range sizes {
		if i%size == rank {
			offs[i/size] = total
		}
		total += sz
	}

	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		// In place, in file order: one writer at a time.
		var err error
		for s := range S {
			for r := range size {
				if r == rank && err == nil && pieces[s].size > 0 {
					err = writeInPlace(path, pieces[s].write)
				}
				if aerr := agree(g, path, err); aerr != nil {
					return "", aerr
				}
			}
		}
		return "", nil
	}

	// Rank 0 creates the temporary file under a name every member knows,
	// carrying rank 0's PID (outtx.TempName), after removing those of
	// path that a killed run left (outtx.Sweep).
	dir, file := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	key := []int64{0, 0, 0}
	if rank == 0 {
		outtx.Sweep(dir, file)
		pid, host := outtx.Owner()
		key[0], key[1], key[2] = int64(pid), int64(host), int64(rand.Uint64()>>1)
	}
	g.SumI64(key)
	tmp := outtx.TempNameFor(dir, file, int(key[0]), uint32(key[1]), uint64(key[2]))
	// Errors name path, not the temporary.
	named := func(err error) error { return outtx.Named(err, tmp, path) }
	var f *os.File
	if rank == 0 {
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err := agree(g, path, named(err)); err != nil {
		return "", err
	}
	if rank != 0 {
		f, err = os.OpenFile(tmp, os.O_WRONLY, 0)
	}
	for s := 0; err == nil && s < S; s++ {
		if pieces[s].size == 0 {
			continue
		}
		w := bufio.NewWriterSize(io.NewOffsetWriter(f, offs[s]), 1<<20)
		if err = pieces[s].write(w); err == nil {
			err = w.Flush()
		}
	}
	if f != nil {
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err := agree(g, path, named(err)); err != nil {
		if rank == 0 {
			os.Remove(tmp)
		}
		return "", err
	}
	if rank == 0 {
		err = os.Chmod(tmp, 0o644)
		if err == nil {
			err = os.Truncate(tmp, total) // no stale bytes past the end
		}
		if err == nil && commit {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			os.Remove(tmp)
		} else if commit {
			outtx.SyncDir(dir)
		}
	}
	if err := agree(g, path, named(err)); err != nil {
		return "", err
	}
	if commit {
		return "", nil
	}
	return tmp, nil
}

// agree returns err on the member that has it, and ErrOtherRank (naming
// path) on the others when any member has one; nil when none has.
func agree(g Group, path string, err error) error {
	flag := []int64{0}
	if err != nil {
		flag[0] = 1
	}
	g.SumI64(flag)
	return groupErrIf(flag[0] > 0, path, err)
}

func groupErr(path string, err error) error { return groupErrIf(true, path, err) }

func groupErrIf(failed bool, path string, err error) error {
	switch {
	case err != nil:
		return err
	case failed:
		return fmt.Errorf("writing %s: %w", path, ErrOtherRank)
	}
	return nil
}

// writeInPlace opens the existing non-regular file path and writes to it.
func writeInPlace(path string, fill func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := fill(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// countWriter counts the bytes written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
