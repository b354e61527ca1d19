package eval

import (
	"fmt"
	"path/filepath"
	"sort"
)

// Merge reads the runs.json of several `dainx eval` outputs (dirs, as
// written by WriteDir) of the same tensor and configuration made with
// different seeds — repeats run in batches, or on several machines — and
// returns them as one result: the runs in the order of dirs with their
// repeats renumbered 1, 2, … across the outputs (so each split keeps one
// number), the seconds summed, and a provenance that is the first
// output's with Repeats the total, Seeds the splits' seeds, and MergedFrom
// and Commands naming the sources. Outputs of any ProvenanceVersion mix.
//
// The recorded provenances must be Compatible apart from the seed. It is
// an error if they are not, if fewer than two outputs are given, or if two
// outputs hold a run of the same method and ratio with the same seed (the
// same split would be counted twice).
func Merge(dirs []string) (*Results, Provenance, error) {
	if len(dirs) < 2 {
		return nil, Provenance{}, fmt.Errorf("merge: need at least two eval outputs, have %d", len(dirs))
	}
	out := &Results{}
	var first Provenance
	var commands []string
	type key struct {
		method string
		ratio  float64
		seed   uint64
	}
	from := map[key]string{}
	seedSet := map[uint64]bool{}
	offset := 0
	for i, dir := range dirs {
		res, prov, err := Load(dir)
		if err != nil {
			return nil, Provenance{}, err
		}
		if len(res.Runs) == 0 {
			return nil, Provenance{}, fmt.Errorf("merge: %s: no runs", filepath.Join(dir, "runs.json"))
		}
		if i == 0 {
			first = prov
			out.Spec.Methods = res.Spec.Methods
		} else if err := first.Compatible(prov, false); err != nil {
			return nil, Provenance{}, fmt.Errorf("merge: %s and %s: %w", dirs[0], dir, err)
		}
		if prov.Command != "" || len(prov.Commands) == 0 {
			commands = append(commands, prov.Command)
		} else {
			commands = append(commands, prov.Commands...)
		}
		maxRepeat := 0
		for _, run := range res.Runs {
			k := key{run.Method, run.Ratio, run.Seed}
			if other, dup := from[k]; dup {
				return nil, Provenance{}, fmt.Errorf("merge: %s and %s both hold %s at ratio %g with seed %d (the same split twice)", other, dir, run.Method, run.Ratio, run.Seed)
			}
			from[k] = dir
			seedSet[run.Seed] = true
			maxRepeat = max(maxRepeat, run.Repeat)
			run.Repeat += offset
			out.Runs = append(out.Runs, run)
		}
		offset += maxRepeat
		out.Seconds += res.Seconds
	}
	seeds := make([]uint64, 0, len(seedSet))
	for s := range seedSet {
		seeds = append(seeds, s)
	}
	sort.Slice(seeds, func(i, j int) bool { return seeds[i] < seeds[j] })
	merged := first
	merged.Repeats, merged.RepeatsRequested = offset, 0
	merged.Seeds, merged.MergedFrom, merged.Commands = seeds, dirs, commands
	merged.Command = ""
	merged.Seconds = out.Seconds
	return out, merged, nil
}
