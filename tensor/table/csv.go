package table

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dainx/dainx/tensor"
)

// errLineTooLong is lineLimiter's error.
var errLineTooLong = errors.New("line too long")

// lineLimiter passes text through, failing once a line runs past limit
// bytes (so that no reader above it buffers more), and counts the lines
// it has passed.
type lineLimiter struct {
	r     io.Reader
	limit int
	run   int // bytes since the last '\n'
	lines int // '\n's passed
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	b := p[:n]
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.run += len(b)
			break
		}
		if l.run+i > l.limit {
			return 0, errLineTooLong
		}
		l.lines++
		l.run = 0
		b = b[i+1:]
	}
	if l.run > l.limit {
		return 0, errLineTooLong
	}
	return n, err
}

// readCSVFile reads the CSV (comma ',') or TSV (comma '\t') table at
// path into b.
func readCSVFile(path string, comma rune, b *builder) error {
	r, read, size, closeFn, err := openText(path)
	if err != nil {
		return err
	}
	defer closeFn()
	b.read, b.size = read, size
	return readCSV(r, comma, b)
}

// readCSV reads a header line and then one cell per record. Quoting is
// RFC 4180's (encoding/csv); blank lines are skipped; a UTF-8 byte order
// mark before the header is dropped.
func readCSV(r io.Reader, comma rune, b *builder) error {
	ll := &lineLimiter{r: r, limit: MaxLine}
	cr := csv.NewReader(ll)
	cr.Comma = comma
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	readErr := func(err error) error {
		var pe *csv.ParseError
		switch {
		case errors.Is(err, errLineTooLong):
			return &tensor.ParseError{File: b.file, Line: ll.lines + 1, Msg: fmt.Sprintf("line longer than the limit of %d bytes", MaxLine)}
		case errors.As(err, &pe):
			return &tensor.ParseError{File: b.file, Line: pe.Line, Msg: fmt.Sprintf("%v (byte %d of the line)", pe.Err, pe.Column)}
		}
		// A failed read (a truncated gzip stream), after the whole lines
		// the limiter passed: the record cut by it is not reported.
		return tensor.ReadError(b.file, ll.lines, err)
	}
	header, err := cr.Read()
	if err == io.EOF {
		return &tensor.ParseError{File: b.file, Msg: "empty: no header line naming the columns"}
	}
	if err != nil {
		return readErr(err)
	}
	headLine, _ := cr.FieldPos(0)
	if len(header) > MaxColumns {
		return &tensor.ParseError{File: b.file, Line: headLine, Msg: fmt.Sprintf("%d columns: above the limit of %d", len(header), MaxColumns)}
	}
	header = slices.Clone(header)
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	pos, vpos, err := locate(header, b.spec, func(msg string) error {
		return &tensor.ParseError{File: b.file, Line: headLine, Msg: msg}
	})
	if err != nil {
		return err
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return readErr(err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return &tensor.ParseError{File: b.file, Line: line, Msg: fmt.Sprintf("%d fields, the header has %d columns", len(rec), len(header))}
		}
		for n, p := range pos {
			if b.modes[n].Bin.IsTime() {
				err = b.timeText(n, rec[p], line)
			} else {
				err = b.id(n, rec[p], line)
			}
			if err != nil {
				return err
			}
		}
		if vpos >= 0 {
			err = b.value(rec[vpos], line)
		} else {
			err = b.valueFloat(0, line)
		}
		if err != nil {
			return err
		}
		b.endRow(line)
	}
	return nil
}

// locate returns the position in header of every mode column of spec and
// of its value column (-1 when spec has none); bad makes the error for a
// column the header lacks or holds twice.
func locate(header []string, spec Spec, bad func(string) error) ([]int, int, error) {
	at := map[string]int{}
	twice := map[string]bool{}
	for i, h := range header {
		if _, ok := at[h]; ok {
			twice[h] = true
			continue
		}
		at[h] = i
	}
	find := func(col, what string) (int, error) {
		i, ok := at[col]
		if !ok {
			return 0, bad(fmt.Sprintf("no column %s (%s); the header has %s", quote(col), what, listCols(header)))
		}
		if twice[col] {
			return 0, bad(fmt.Sprintf("column %s appears more than once in the header", quote(col)))
		}
		return i, nil
	}
	pos := make([]int, len(spec.Modes))
	for n, m := range spec.Modes {
		i, err := find(m.Column, "-index")
		if err != nil {
			return nil, 0, err
		}
		pos[n] = i
	}
	vpos := -1
	if spec.Value != "" {
		i, err := find(spec.Value, "-value")
		if err != nil {
			return nil, 0, err
		}
		vpos = i
	}
	return pos, vpos, nil
}

func quote(s string) string { return tensor.Echo(s) }

// listCols lists column names for a message: at most 20, each cut.
func listCols(cols []string) string {
	var out []string
	for i, c := range cols {
		if i == 20 {
			out = append(out, fmt.Sprintf("… (%d in all)", len(cols)))
			break
		}
		out = append(out, quote(c))
	}
	return strings.Join(out, ", ")
}
