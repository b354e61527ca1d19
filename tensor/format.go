package tensor

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Format is a tensor file format. For the text formats (TSV, TNS) it decides
// the default index base and the field separator used when writing; reading
// accepts spaces, tabs and '#' comment lines in either. BIN is SPLATT's
// binary coordinate format (see the package doc).
type Format int

const (
	// TSV is DAIN's format: tab-separated 0-based indices, then the value.
	TSV Format = iota
	// TNS is the FROSTT .tns format: space-separated 1-based indices, then
	// the value; '#' starts a comment line.
	TNS
	// BIN is SPLATT's binary coordinate format (.bin, as written by
	// "splatt convert"): a header, the mode sizes, then the 0-based indices
	// mode by mode and the values, little-endian.
	BIN
)

// String returns "tsv", "tns" or "bin" (or "Format(k)" for an unknown
// value).
func (f Format) String() string {
	switch f {
	case TSV:
		return "tsv"
	case TNS:
		return "tns"
	case BIN:
		return "bin"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// DefaultIndexBase returns the index base of the format: 0 for TSV and BIN,
// 1 for TNS.
func (f Format) DefaultIndexBase() int {
	if f == TNS {
		return 1
	}
	return 0
}

// ParseFormat parses a format name, "tsv", "tns" or "bin"
// (case-insensitive).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "tsv":
		return TSV, nil
	case "tns":
		return TNS, nil
	case "bin":
		return BIN, nil
	}
	return 0, fmt.Errorf("tensor: unknown format %q (want tsv, tns or bin)", s)
}

// FormatOf guesses the format from a file name: after stripping a ".gz"
// suffix, the extension ".tns" (case-insensitive) means TNS, ".bin" means
// BIN and anything else TSV.
func FormatOf(path string) Format {
	p := path
	if strings.HasSuffix(strings.ToLower(p), ".gz") {
		p = p[:len(p)-3]
	}
	switch ext := filepath.Ext(p); {
	case strings.EqualFold(ext, ".tns"):
		return TNS
	case strings.EqualFold(ext, ".bin"):
		return BIN
	}
	return TSV
}

// ResolveIndexBase returns the index base to use for format f and the requested
// base (-1 = the format's default), or an error for a base outside
// -1..MaxDim.
func ResolveIndexBase(f Format, base int) (int64, error) {
	switch {
	case base == -1:
		return int64(f.DefaultIndexBase()), nil
	case base < 0 || base > MaxDim:
		return 0, fmt.Errorf("tensor: invalid index base %d (want -1 for the default, or 0..%d)", base, MaxDim)
	}
	return int64(base), nil
}

// Shortest returns the float64 nearest to the shortest decimal that reads
// back as the float32 p, so a float32 prediction prints as "2.2926"
// rather than "2.2925999164581299": how dainx widens a net's float32
// predictions into values (new cells' values, a stack's inputs).
func Shortest(p float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(p), 'g', -1, 32), 64)
	return v
}
