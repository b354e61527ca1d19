package eval

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
)

// Merge reads the runs.json of several `dainx eval` outputs (dirs, as
// written by WriteDir) of the same tensor and configuration made with
// different seeds — repeats run in batches, or on several machines — and
// returns them as one result: the runs in the order of dirs with their
// repeats renumbered 1, 2, … across the outputs (so each split keeps one
// number), the seconds summed, and a configuration that is the first
// output's with "repeats" set to the total, "seeds" listing the splits'
// seeds, and "merged_from" and "commands" naming the sources.
//
// The recorded configurations must agree on the tensor (dims and nnz), the
// methods, the ratios and the training configuration ("base") apart from its
// seed. It is an error if they do not, if fewer than two outputs are given,
// or if two outputs hold a run of the same method and ratio with the same
// seed (the same split would be counted twice).
func Merge(dirs []string) (*Results, map[string]any, error) {
	if len(dirs) < 2 {
		return nil, nil, fmt.Errorf("merge: need at least two eval outputs, have %d", len(dirs))
	}
	out := &Results{}
	var config map[string]any
	var commands []any
	type key struct {
		method string
		ratio  float64
		seed   uint64
	}
	from := map[key]string{}
	seedSet := map[uint64]bool{}
	offset := 0
	for _, dir := range dirs {
		res, cfg, err := Load(dir)
		if err != nil {
			return nil, nil, err
		}
		if len(res.Runs) == 0 {
			return nil, nil, fmt.Errorf("merge: %s: no runs", filepath.Join(dir, "runs.json"))
		}
		if config == nil {
			config = cfg
			out.Spec.Methods = res.Spec.Methods
		} else if err := sameExperiment(config, cfg); err != nil {
			return nil, nil, fmt.Errorf("merge: %s and %s: %w", dirs[0], dir, err)
		}
		commands = append(commands, cfg["command"])
		maxRepeat := 0
		for _, run := range res.Runs {
			k := key{run.Method, run.Ratio, run.Seed}
			if other, dup := from[k]; dup {
				return nil, nil, fmt.Errorf("merge: %s and %s both hold %s at ratio %g with seed %d (the same split twice)", other, dir, run.Method, run.Ratio, run.Seed)
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
	merged := map[string]any{}
	for k, v := range config {
		merged[k] = v
	}
	merged["repeats"] = offset
	merged["seeds"] = seeds
	merged["merged_from"] = dirs
	merged["commands"] = commands
	merged["seconds"] = out.Seconds
	delete(merged, "command")
	return out, merged, nil
}

// Compatible reports how two recorded eval configurations (as runs.json
// holds them, decoded from JSON) differ in what makes their runs
// comparable: the tensor's dims and nnz, the methods, the ratios and the
// training configuration apart from its seed — or, with sameSeed, including
// it. It returns nil when they agree.
func Compatible(a, b map[string]any, sameSeed bool) error {
	if err := sameExperiment(a, b); err != nil {
		return err
	}
	if sameSeed {
		ba, _ := a["base"].(map[string]any)
		bb, _ := b["base"].(map[string]any)
		if !reflect.DeepEqual(ba["Seed"], bb["Seed"]) {
			return fmt.Errorf("different -seed (%v, %v)", ba["Seed"], bb["Seed"])
		}
	}
	return nil
}

// sameExperiment reports how two recorded eval configurations differ in
// what makes their runs comparable, the seed aside.
func sameExperiment(a, b map[string]any) error {
	for _, k := range []string{"dims", "nnz", "methods", "ratios"} {
		if !reflect.DeepEqual(a[k], b[k]) {
			return fmt.Errorf("different %s (%v, %v)", k, a[k], b[k])
		}
	}
	ba, _ := a["base"].(map[string]any)
	bb, _ := b["base"].(map[string]any)
	if ba == nil || bb == nil {
		return fmt.Errorf("a runs.json without its training configuration (\"base\")")
	}
	for k := range union(ba, bb) {
		if k == "Seed" || k == "Progress" {
			continue
		}
		if !reflect.DeepEqual(ba[k], bb[k]) {
			return fmt.Errorf("different training configuration: %s %v, %v", k, ba[k], bb[k])
		}
	}
	return nil
}

func union(a, b map[string]any) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}
