package rundir

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dainx/dainx/checkpoint"
	"github.com/dainx/dainx/tensor"
)

// Augmented is the gob-encoded record saved with the new cells
// (KindAugmented): what a run's report needs of the steps before them. The
// caller defines it; the directory checks the cells against its counts.
type Augmented interface {
	// Counts returns the cells the record holds (this process's), their
	// total over the processes of a run spread over them (0: n) and the
	// dims of the tensor they are cells of.
	Counts() (n, total int, dims []int)
}

// SaveAugmented records the new cells aug with r (gob-encoded, the
// caller's record, of which an Augmented is a pointer), then calls the
// hook at ("augmented", 0, "saved").
func (c *Dir) SaveAugmented(r any, aug *tensor.COO) error {
	if c == nil {
		return nil
	}
	if err := c.write(KindAugmented, "", func(w *checkpoint.Writer) {
		w.Gob("augmented", r)
		w.I32("idx", aug.Idx)
		w.F64("val", aug.Val)
	}); err != nil {
		return err
	}
	return c.At("augmented", 0, "saved")
}

// LoadAugmented decodes the record of the new cells into r (a pointer)
// and returns the cells, or false if there is none. A run that asked to
// keep what the record lacks (Run.Unkept) is refused; cells that cannot
// be a run's on this input (checkAugmented) are an ErrNotCheckpoint error
// naming the file and the field. A record of no cell returns cells of no
// index and no value (nil slices), as a run that makes none.
func (c *Dir) LoadAugmented(r Augmented) (*tensor.COO, bool, error) {
	if c == nil {
		return nil, false, nil
	}
	file, err := c.read(KindAugmented, "")
	if err != nil || file == nil {
		return nil, false, err
	}
	if err := c.keepsNotSaved(); err != nil {
		return nil, false, err
	}
	path := c.path(KindAugmented, "")
	if err := file.Decode("augmented", r); err != nil {
		return nil, false, fmt.Errorf("dain: -resume: %s: %w", path, err)
	}
	n, total, dims := r.Counts()
	aug := &tensor.COO{Dims: dims, Idx: file.I32["idx"], Val: file.F64["val"]}
	if err := checkAugmented(n, total, aug, c.head.Input.Dims); err != nil {
		return nil, false, fmt.Errorf("dain: -resume: %s: %w: %v", path, ErrNotCheckpoint, err)
	}
	if n == 0 {
		aug.Idx, aug.Val = nil, nil // as a run that makes no cells
	}
	return aug, true, nil
}

// keepsNotSaved returns, for a run that resumes after the steps before
// the new cells (their record is in the checkpoint), the error that what
// the run was asked to keep of them (Run.Unkept) is not in the
// checkpoint, saying whether the run there finished or was interrupted
// and exactly what to run; nil if it was asked for none of them.
func (c *Dir) keepsNotSaved() error {
	what, flags := c.run.Unkept, c.run.UnkeptFlags
	if len(what) == 0 {
		return nil
	}
	dir := c.dir
	if c.run.Ranks != 0 {
		dir = filepath.Dir(dir)
	}
	state := "was interrupted after steps 1–4"
	resume := "to finish that run, run the same command with -resume but without " + strings.Join(flags, ", ")
	if c.finishedRun() {
		state = "finished"
		resume = "to have that run's result again, run the same command with -resume but without " + strings.Join(flags, ", ")
	}
	return fmt.Errorf("dain: -resume: the run in %s %s, and its checkpoint does not keep %s (%s), which steps 1–4 compute; %s; to have them, remove %s (or give another -checkpoint directory) and run the same command without -resume", dir, state, strings.Join(what, ", "), strings.Join(flags, ", "), resume, dir)
}

// checkAugmented reports what in a record of n cells (total over the
// processes) and its cells aug (read from a file) cannot be a run's on an
// input of the given dims: a negative count, a total below this process's
// count, dims other than the input's, indices and values that are not n
// cells, an index outside its mode, a value that is not finite, or cells
// that tensor.COO.Validate refuses (a value too large, a cell twice). The
// field is named.
func checkAugmented(n, total int, aug *tensor.COO, dims []int) error {
	switch {
	case n < 0 || total < 0 || total > 0 && total < n:
		return fmt.Errorf("n_aug %d and total %d cells", n, total)
	case !slices.Equal(aug.Dims, dims):
		return fmt.Errorf("dims %v; the input's are %v", aug.Dims, dims)
	case len(aug.Val) != n || len(aug.Idx) != len(aug.Val)*len(dims):
		return fmt.Errorf("%d indices and %d values for %d cells of %d modes", len(aug.Idx), len(aug.Val), n, len(dims))
	}
	for i, x := range aug.Idx {
		if m := i % len(dims); x < 0 || int(x) >= dims[m] {
			return fmt.Errorf("idx: cell %d's index %d of mode %d is outside 0…%d", i/len(dims), x, m, dims[m]-1)
		}
	}
	for i, v := range aug.Val {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("val: cell %d's value %v is not finite", i, v)
		}
	}
	if len(aug.Val) > 0 {
		if err := aug.Validate(); err != nil { // magnitudes, repeated cells
			return fmt.Errorf("idx, val: %w", err)
		}
	}
	return nil
}
