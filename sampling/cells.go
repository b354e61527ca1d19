package sampling

import (
	"errors"
	"fmt"

	"github.com/dainx/dainx/cluster"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/tensor"
)

// Tables holds one alias table per mode, uploaded to a backend.
type Tables struct {
	be            compute.Backend
	host          []*Alias
	thresh, alias []compute.I32
}

// Upload copies the alias tables of every mode to the backend. Free releases
// the device copies.
func Upload(be compute.Backend, tables []*Alias) *Tables {
	t := &Tables{be: be, host: tables}
	for _, a := range tables {
		th := make([]int32, len(a.Thresh))
		for i, v := range a.Thresh {
			th[i] = int32(v)
		}
		tb, ab := be.AllocI32(len(th)), be.AllocI32(len(a.Alias))
		be.UploadI32(tb, th)
		be.UploadI32(ab, a.Alias)
		t.thresh = append(t.thresh, tb)
		t.alias = append(t.alias, ab)
	}
	return t
}

// Free releases the device copies of the tables.
func (t *Tables) Free() {
	for n := range t.thresh {
		t.thresh[n].Free()
		t.alias[n].Free()
	}
}

// Order returns the number of modes N.
func (t *Tables) Order() int { return len(t.host) }

// Draw computes candidate cells for the draw numbers ctr, ctr+1, …,
// ctr+M−1 into out (M×N, =): entity n of draw m comes from mode n's table
// through compute.Backend.SampleAlias with counter ctr+m and column n.
// It panics if out's length is not a multiple of N.
func (t *Tables) Draw(out compute.I32, key, ctr uint64) {
	for n := range t.host {
		t.be.SampleAlias(out, len(t.host), n, t.thresh[n], t.alias[n], key, ctr)
	}
}

// Options tunes Cells. The zero value gives the defaults.
type Options struct {
	// Key seeds the Philox stream of draws.
	Key uint64
	// MaxDraws bounds the candidate draws; 0 means 100·n + 100000.
	MaxDraws int
	// Round is the largest number of candidates drawn per backend call;
	// 0 means 1<<18.
	Round int
}

// Stats counts what Cells drew.
type Stats struct {
	Draws     int // candidates drawn
	Observed  int // rejected: already an observed cell
	Duplicate int // rejected: already drawn
}

// Cells draws n distinct new cells (DAIN Algorithm 1, lines 8–13, "without
// replacement"): each candidate takes entity iₙ from mode n's table
// independently; a candidate that is one of the observed cells or was
// already accepted is rejected and the next draw is taken. Candidates are
// drawn in rounds on the backend and filtered on the host in draw order, so
// the result depends only on (tables, observed, n, Key), never on the
// backend or Round.
//
// observed holds K×N entity indices (0-based, within each table's size).
// The result is n×N entity indices, row-major.
//
// It returns an error, before drawing, when the cells reachable from the
// tables (entities of positive weight in every mode) minus the observed ones
// among them are fewer than n; and during drawing when MaxDraws candidates
// did not yield n new cells, or the backend failed.
func (t *Tables) Cells(observed []int32, n int, opt Options) ([]int32, Stats, error) {
	return t.CellsExcluding([][]int32{observed}, n, opt)
}

// CellsExcluding is Cells with the observed cells given in parts (each
// K×N), as if concatenated: a caller whose observed cells are the training
// and the validation cells need not copy them into one slice. It is
// CellsShared on cluster.Local, one process owning every observed cell.
func (t *Tables) CellsExcluding(observed [][]int32, n int, opt Options) ([]int32, Stats, error) {
	order := t.Order()
	total := 0
	for _, part := range observed {
		if len(part)%order != 0 {
			panic(fmt.Sprintf("sampling: %d observed indices for order %d", len(part), order))
		}
		total += len(part) / order
	}
	if n < 0 {
		panic(fmt.Sprintf("sampling: Cells(n = %d)", n))
	}
	dims := make([]int, order)
	for i, a := range t.host {
		dims[i] = len(a.Thresh)
	}
	obs := tensor.NewCellSet(dims, total)
	inSupport := 0
	for _, part := range observed {
		for k := 0; k < len(part); k += order {
			cell := part[k : k+order]
			if obs.Add(cell) && t.reachable(cell) {
				inSupport++
			}
		}
	}
	out, _, st, err := t.CellsShared(obs, inSupport, n, opt, cluster.Local{})
	return out, st, err
}

// reachable reports whether every entity of cell has positive weight.
func (t *Tables) reachable(cell []int32) bool {
	for n, i := range cell {
		if t.host[n].P[i] == 0 {
			return false
		}
	}
	return true
}

// supportSize returns Πₙ |{i : pₙ(i) > 0}| as a float64 (exact below 2⁵³).
func (t *Tables) supportSize() float64 {
	s := 1.0
	for _, a := range t.host {
		k := 0
		for _, p := range a.P {
			if p > 0 {
				k++
			}
		}
		s *= float64(k)
	}
	return s
}

// ErrSupport is the error (errors.Is) of a draw of more new cells than the
// entities of positive importance span, less the observed cells among
// them.
var ErrSupport = errors.New("sampling: more new cells than the entities of positive importance span")

type errSupport struct{ msg string }

func (e errSupport) Error() string        { return e.msg }
func (e errSupport) Is(target error) bool { return target == ErrSupport }

// supportError is ErrSupport for n new cells, a support of support cells
// and inSupport observed cells in it.
func supportError(n int, support float64, inSupport int) error {
	return errSupport{fmt.Sprintf("sampling: cannot draw %d new cells: the entities of positive importance span %.0f cells, %d of them observed", n, support, inSupport)}
}
