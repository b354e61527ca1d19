package tensor

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dainx/dainx/internal/outtx"
)

// WriteOptions controls Write and WriteFile.
type WriteOptions struct {
	// Format decides the separator (TSV '\t', TNS ' ') and the default index
	// base; BIN writes SPLATT's binary coordinate format.
	Format Format
	// IndexBase is added to every index written: -1 means the format's
	// default (TSV 0, TNS 1, BIN 0); otherwise any value in 0..MaxDim.
	IndexBase int
}

// Write writes t to w in the format opt.Format.
//
// Text (TSV, TNS): one cell per line, its indices plus the index base
// separated by the format's separator, then the value formatted with
// strconv.FormatFloat(v, 'g', -1, 64), then '\n'. Reading the output back
// with the same format and base gives the same COO, except that Dims are
// recomputed from the largest indices (Dims are not stored in the file).
//
// BIN: SPLATT's binary coordinate format (see the package doc) with t.Dims
// as the mode sizes and SPLATT's own choice of widths: 4-byte indices (8
// when NNZ ≥ 2^32−1), and 4-byte values when every value is exactly a
// float32, else 8, so the file is lossless. Reading it back gives the same
// COO, Dims included.
//
// t is checked with Validate first; an invalid t (or an invalid IndexBase)
// is an error and nothing is written. Write errors from w are returned.
func Write(w io.Writer, t *COO, opt WriteOptions) error {
	base, err := ResolveIndexBase(opt.Format, opt.IndexBase)
	if err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	return write(w, t, opt.Format, base)
}

func write(w io.Writer, t *COO, f Format, base int64) error {
	if f == BIN {
		return writeBin(w, t, base)
	}
	sep := byte('\t')
	if f == TNS {
		sep = ' '
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	n := t.Order()
	buf := make([]byte, 0, 256)
	for k := range t.NNZ() {
		buf = buf[:0]
		for _, x := range t.Idx[k*n : (k+1)*n] {
			buf = strconv.AppendInt(buf, int64(x)+base, 10)
			buf = append(buf, sep)
		}
		buf = strconv.AppendFloat(buf, t.Val[k], 'g', -1, 64)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteFile writes t to path as Write does, gzip-compressed when path ends
// in ".gz" (case-insensitive; whatever the format). It is atomic: it writes a temporary file in
// the same directory, syncs it and renames it over path, so on any error no
// file at path is created or changed and the temporary file is removed. The
// new file gets mode 0644 (the umask is not applied). t is checked with
// Validate before any file is created.
func WriteFile(path string, t *COO, opt WriteOptions) error {
	return writeFile(path, t, opt, nil)
}

// writeFile is WriteFile with an optional wrapper around the file writer
// (tests use it to inject write failures).
func writeFile(path string, t *COO, opt WriteOptions, wrap func(io.Writer) io.Writer) error {
	if _, err := ResolveIndexBase(opt.Format, opt.IndexBase); err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	return AtomicWrite(path, func(w io.Writer) error {
		if wrap != nil {
			w = wrap(w)
		}
		return Encode(w, path, t, opt)
	})
}

// Encode writes t to w as WriteFile writes it to a file named name: as
// Write does, gzip-compressed when name ends in ".gz" (case-insensitive).
// It is for callers that stage the file themselves (an output
// transaction). t and opt are checked first, before anything is written.
func Encode(w io.Writer, name string, t *COO, opt WriteOptions) error {
	base, err := ResolveIndexBase(opt.Format, opt.IndexBase)
	if err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	var zw *gzip.Writer
	if strings.HasSuffix(strings.ToLower(name), ".gz") {
		zw = gzip.NewWriter(w) // header: no name, mtime 0, so output is reproducible
		w = zw
	}
	if err := write(w, t, opt.Format, base); err != nil {
		return err
	}
	if zw != nil {
		return zw.Close()
	}
	return nil
}

// AtomicWrite creates path with the bytes that fill writes, atomically: it
// writes a temporary file in the same directory (named after path and this
// process, outtx.TempName), syncs it and renames it over path, so on any
// error (fill's included) no file at path is created or changed and the
// temporary file is removed. Temporaries of path that a killed process
// left are removed first (outtx.Sweep). The new file gets mode 0644 (the
// umask is not applied). A path that exists and is not a regular file
// (/dev/null, /dev/stdout, a named pipe) is written in place instead, since
// it cannot be replaced by a rename without destroying it. Errors name
// path, never the temporary.
func AtomicWrite(path string, fill func(w io.Writer) error) (err error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if err := fill(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	dir, file := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	outtx.Sweep(dir, file)
	tmp, err := outtx.CreateTemp(dir, file)
	if err != nil {
		return &os.PathError{Op: "create", Path: path, Err: outtx.Bare(err)}
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = outtx.Named(err, tmp.Name(), path)
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return &os.PathError{Op: "rename", Path: path, Err: outtx.Bare(err)}
	}
	outtx.SyncDir(dir)
	return nil
}
