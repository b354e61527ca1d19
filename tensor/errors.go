package tensor

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ParseError reports bad input in a tensor file.
type ParseError struct {
	File string // the name given to Read, or the path given to ReadFile
	Line int    // 1-based line number; 0 when the error is not tied to a line
	Msg  string // the reason, e.g. "value \"nan\" is not finite"
}

// Error returns "file:line: msg", or "file: msg" when Line is 0.
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// maxEcho is the most bytes of an input field that an error message
// repeats: a field of megabytes is cut there.
const maxEcho = 80

// Echo returns the field s of an input file quoted for an error message,
// cut as echo cuts it: at most 80 bytes of it, then "… (N bytes)".
func Echo(s string) string { return echo([]byte(s), true) }

// echo returns field b for an error message: quoted (strconv.Quote) when
// quote is set, else as it is; when b is longer than maxEcho bytes, only
// its first maxEcho bytes (whole UTF-8 characters) followed by "…" and
// b's length in bytes.
func echo(b []byte, quote bool) string {
	s, long := b, len(b) > maxEcho
	if long {
		n := maxEcho
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		s = b[:n]
	}
	out := string(s)
	if quote {
		out = strconv.Quote(out)
	}
	if long {
		out += fmt.Sprintf("… (%d bytes)", len(b))
	}
	return out
}
