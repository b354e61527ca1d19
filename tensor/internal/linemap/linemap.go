// Package linemap maps item numbers (the cells of a text tensor, the rows
// of a table) to the lines they stand on, for the errors of the readers in
// tensor and tensor/table.
package linemap

import "sort"

// Map maps item numbers to line numbers in little memory: a run of items
// on consecutive lines is one entry, so a file whose only blank or comment
// lines come first needs one entry in all. It replaces a line number per
// item, kept only to name lines in errors (a duplicate cell, first on line
// …). The zero value is an empty map.
type Map struct {
	first []int // first item of each run, increasing
	line  []int // the line of that item
}

// Add records that item k (k = the previous item + 1, or 0) is on line.
func (m *Map) Add(k, line int) {
	if n := len(m.first); n > 0 && line-m.line[n-1] == k-m.first[n-1] {
		return
	}
	m.first = append(m.first, k)
	m.line = append(m.line, line)
}

// LineOf returns the line of item k (k must have been added).
func (m *Map) LineOf(k int) int {
	i := sort.SearchInts(m.first, k+1) - 1
	return m.line[i] + k - m.first[i]
}

// Append adds the items of o, each numbered dk more and on a line dl
// further than in o (a block's items after those of the blocks before
// it): Add of every run of o, in order.
func (m *Map) Append(o *Map, dk, dl int) {
	for i, k := range o.first {
		m.Add(dk+k, dl+o.line[i])
	}
}

// Reset empties m, keeping its memory.
func (m *Map) Reset() {
	m.first, m.line = m.first[:0], m.line[:0]
}
