package table

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Format is a table file format.
type Format int

const (
	// CSV is comma-separated text with a header line (RFC 4180 quoting).
	CSV Format = iota + 1
	// TSV is tab-separated text with a header line (the same quoting).
	TSV
	// Parquet is Apache Parquet.
	Parquet
)

// String returns "csv", "tsv" or "parquet".
func (f Format) String() string {
	switch f {
	case CSV:
		return "csv"
	case TSV:
		return "tsv"
	case Parquet:
		return "parquet"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Ext returns the file extension of the format: ".csv", ".tsv" or
// ".parquet".
func (f Format) Ext() string { return "." + f.String() }

// ParseFormat parses "csv", "tsv" or "parquet" (case-insensitive).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "csv":
		return CSV, nil
	case "tsv":
		return TSV, nil
	case "parquet":
		return Parquet, nil
	}
	return 0, fmt.Errorf("unknown table format %q (want csv, tsv or parquet)", s)
}

// FormatOf returns the table format a file name names by its extension,
// after any .gz: .csv is CSV, .tsv and .tab TSV, .parquet and .pq Parquet
// (case-insensitive); ok is false for any other name.
func FormatOf(path string) (f Format, ok bool) {
	p := strings.ToLower(path)
	p = strings.TrimSuffix(p, ".gz")
	switch filepath.Ext(p) {
	case ".csv":
		return CSV, true
	case ".tsv", ".tab":
		return TSV, true
	case ".parquet", ".pq":
		return Parquet, true
	}
	return 0, false
}

// Bin is how a time column is cut into the entities of a mode: every
// time falls in one bin, numbered from the Unix epoch (UTC), and the
// mode's index of a bin is its number less the first bin's. The zero Bin
// is no binning: the column holds IDs.
type Bin struct {
	// Unit is "hour", "day", "week" (from Monday 00:00 UTC, as ISO 8601),
	// "month" (calendar months, UTC) or "" for Seconds-wide bins.
	Unit string
	// Seconds is the width of a bin (3600, 86400, 604800; 0 for month).
	Seconds int64
}

// IsTime reports whether b bins times (it is not the zero Bin).
func (b Bin) IsTime() bool { return b.Unit != "" || b.Seconds > 0 }

// String returns the bin as -index names it: "day", or "900" for a
// number of seconds.
func (b Bin) String() string {
	if b.Unit != "" {
		return b.Unit
	}
	return strconv.FormatInt(b.Seconds, 10)
}

// weekOrigin is the first Monday after the Unix epoch, 1970-01-05 00:00
// UTC: week bins start on Mondays.
const weekOrigin = 4 * 86400

// Earliest and latest times a table may hold (years 1 to 9999 UTC), in
// Unix seconds.
const (
	minTime = -62135596800
	maxTime = 253402300799
)

// ParseBin parses a time bin: hour, day, week, month, or a whole number
// of seconds (at least 1).
func ParseBin(s string) (Bin, error) {
	switch strings.ToLower(s) {
	case "hour":
		return Bin{"hour", 3600}, nil
	case "day":
		return Bin{"day", 86400}, nil
	case "week":
		return Bin{"week", 7 * 86400}, nil
	case "month":
		return Bin{"month", 0}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > maxTime-minTime {
		return Bin{}, fmt.Errorf("time bin %q: want hour, day, week, month or a number of seconds (1 or more)", s)
	}
	return Bin{"", n}, nil
}

// Of returns the bin of the time sec (Unix seconds, within years 1…9999).
func (b Bin) Of(sec int64) int64 {
	switch b.Unit {
	case "month":
		t := time.Unix(sec, 0).UTC()
		return int64(t.Year()-1970)*12 + int64(t.Month()) - 1
	case "week":
		return floorDiv(sec-weekOrigin, b.Seconds)
	}
	return floorDiv(sec, b.Seconds)
}

// Start returns the time at which bin n starts (UTC).
func (b Bin) Start(n int64) time.Time {
	switch b.Unit {
	case "month":
		y, m := floorDiv(n, 12), n-12*floorDiv(n, 12)
		return time.Date(1970+int(y), time.Month(m+1), 1, 0, 0, 0, 0, time.UTC)
	case "week":
		return time.Unix(weekOrigin+n*b.Seconds, 0).UTC()
	}
	return time.Unix(n*b.Seconds, 0).UTC()
}

// Label returns the start of bin n as RFC 3339 text in UTC, the form
// outputs name a time bin by.
func (b Bin) Label(n int64) string { return b.Start(n).Format(time.RFC3339) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// Mode is one mode of a table: the column that holds its IDs, or times
// when Bin is set.
type Mode struct {
	Column string
	Bin    Bin
}

// Spec says how a table becomes a tensor: the mode columns (-index), the
// value column (-value; "" for cells without values) and the order of
// the indices (-ids).
type Spec struct {
	Modes []Mode
	Value string
	// Sorted numbers the IDs of each mode in sorted order (numbers as
	// numbers when every ID of the mode is one, else as strings); false
	// numbers them in order of first appearance.
	Sorted bool
}

// Columns returns the mode columns' names.
func (s Spec) Columns() []string {
	out := make([]string, len(s.Modes))
	for i, m := range s.Modes {
		out[i] = m.Column
	}
	return out
}

// MaxColumns is the most columns a table (its header) may have, and
// MaxOrder the most mode columns -index may name.
const (
	MaxColumns = 1 << 16
	MaxOrder   = 1024
)

// ParseIndex parses -index: comma-separated column names, each
// optionally followed by :BIN (ParseBin) to bin a time column, e.g.
// "userId,movieId,timestamp:day".
func ParseIndex(s string) ([]Mode, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no column named")
	}
	var out []Mode
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		m := Mode{Column: f}
		if i := strings.LastIndexByte(f, ':'); i >= 0 {
			b, err := ParseBin(f[i+1:])
			if err != nil {
				return nil, fmt.Errorf("column %q: %v", f[:i], err)
			}
			m = Mode{Column: f[:i], Bin: b}
		}
		if m.Column == "" {
			return nil, fmt.Errorf("%q: an empty column name", s)
		}
		if seen[m.Column] {
			return nil, fmt.Errorf("column %q named twice", m.Column)
		}
		seen[m.Column] = true
		out = append(out, m)
	}
	if len(out) > MaxOrder {
		return nil, fmt.Errorf("%d columns: above the limit of %d modes", len(out), MaxOrder)
	}
	return out, nil
}

// FormatIndex is the -index text of modes (ParseIndex's inverse).
func FormatIndex(modes []Mode) string {
	s := make([]string, len(modes))
	for i, m := range modes {
		s[i] = m.Column
		if m.Bin.IsTime() {
			s[i] += ":" + m.Bin.String()
		}
	}
	return strings.Join(s, ",")
}

// timeLayouts are the ISO 8601 / RFC 3339 forms ParseTime accepts; a
// layout without a zone reads the time as UTC, and fractional seconds
// may follow the seconds in any of them.
var timeLayouts = []string{
	time.RFC3339,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05Z0700",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseTime parses a time: Unix seconds (an integer, or a decimal number,
// floored) or ISO 8601 / RFC 3339 text (2018-09-24T03:27:04Z, with an
// offset, a fraction, a space for the T, or a date alone; no zone means
// UTC). It returns Unix seconds (floored), within years 1…9999.
func ParseTime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	if c := s[0]; c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return checkTime(n)
		}
		if x, err := strconv.ParseFloat(s, 64); err == nil {
			if math.IsNaN(x) || x < minTime || x > maxTime+1 {
				return 0, fmt.Errorf("out of range (years 1 to 9999)")
			}
			return checkTime(int64(math.Floor(x)))
		}
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return checkTime(t.Unix())
		}
	}
	return 0, errNotTime
}

// errNotTime is ParseTime's error for text that is no time at all.
var errNotTime = errors.New("not a time")

func checkTime(n int64) (int64, error) {
	if n < minTime || n > maxTime {
		return 0, fmt.Errorf("out of range (years 1 to 9999)")
	}
	return n, nil
}
