package tensor

import "fmt"

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
