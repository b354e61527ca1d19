package foldin

import (
	"fmt"
	"strconv"

	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// MapTable renumbers cells read from a table with dictionaries of their
// own (fresh: IDs in order of first appearance, a time mode's bins from
// its first) onto a model's dictionaries known, as a fold-in into that
// model indexes them: an ID known has its index, a new ID the next
// index after the known ones, in order of first appearance; a time's
// bin is its offset from the model's first bin (a bin after the model's
// last is a new entity). It returns the renumbered cells (a new COO) and
// the grown dictionaries: known's with the new IDs appended (an int mode
// given an ID that is not an integer becomes mixed) and each time mode's
// size covering the new bins. A time before the model's first bin is an
// error naming the data row (1-based) and the column; fresh and known
// must have the same modes (table.Resolve).
func MapTable(cells *tensor.COO, fresh, known *table.Dicts) (*tensor.COO, *table.Dicts, error) {
	order := len(known.Modes)
	if len(fresh.Modes) != order || cells.Order() != order {
		return nil, nil, fmt.Errorf("a table of %d modes, the model has %d", len(fresh.Modes), order)
	}
	grown := &table.Dicts{Table: known.Table, Value: known.Value, Sorted: known.Sorted}
	maps := make([][]int32, order) // ID modes: fresh index → model index
	for n := range known.Modes {
		k, f := known.Modes[n], fresh.Modes[n]
		g := &table.Dict{Column: k.Column, Kind: k.Kind, Bin: k.Bin, First: k.First, Size: k.Size}
		grown.Modes = append(grown.Modes, g)
		if k.Kind == table.KindTime {
			continue // by arithmetic, below
		}
		maps[n] = make([]int32, f.Size)
		g.IDs = append([]string(nil), k.IDs...)
		for j, id := range f.IDs {
			i, ok := k.Lookup(id)
			if !ok {
				if len(g.IDs) >= tensor.MaxDim {
					return nil, nil, fmt.Errorf("column %q: more than %d IDs", f.Column, tensor.MaxDim)
				}
				i = int32(len(g.IDs))
				g.IDs = append(g.IDs, id)
				if g.Kind == table.KindInt && !canonicalInt(id) {
					g.Kind = table.KindMixed
				}
			}
			maps[n][j] = i
		}
		g.Size = len(g.IDs)
	}
	out := &tensor.COO{Idx: make([]int32, len(cells.Idx)), Val: cells.Val}
	for c, j := range cells.Idx {
		n := c % order
		k, f, g := known.Modes[n], fresh.Modes[n], grown.Modes[n]
		if k.Kind != table.KindTime {
			out.Idx[c] = maps[n][j]
			continue
		}
		i := f.First + int64(j) - k.First
		switch {
		case i < 0:
			return nil, nil, fmt.Errorf("row %d: column %q: the time bin starting %s is before the model's first bin, %s: only bins after the model's last can be new (they take the next indices)", c/order+1, f.Column, f.Label(j), k.Origin())
		case i >= tensor.MaxDim:
			return nil, nil, fmt.Errorf("row %d: column %q: the time bin starting %s is more than %d bins after the model's first, %s", c/order+1, f.Column, f.Label(j), tensor.MaxDim-1, k.Origin())
		}
		out.Idx[c] = int32(i)
		g.Size = max(g.Size, int(i)+1)
	}
	out.Dims = grown.Dims()
	return out, grown, nil
}

// canonicalInt reports whether s is an integer as strconv writes it.
func canonicalInt(s string) bool {
	x, err := strconv.ParseInt(s, 10, 64)
	return err == nil && strconv.FormatInt(x, 10) == s
}
