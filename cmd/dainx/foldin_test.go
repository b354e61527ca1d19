package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
)

// foldModel saves a freshly initialised model of the kind on a 20×15×10
// tensor as dir/m (as -model-out would), index base 0.
func foldModel(t *testing.T, dir, kind string) string {
	t.Helper()
	be := cpu.New()
	dims := []int{20, 15, 10}
	rng := rand.New(rand.NewPCG(11, 12))
	var net *nn.Net
	var err error
	switch kind {
	case nn.KindMLP:
		net, err = nn.NewMLP(be, nn.Config{Dims: dims, Layers: []int{12, 8}, Capacity: 64}, rng)
	case nn.KindHybrid:
		net, err = nn.NewHybrid(be, nn.Config{Dims: dims, Layers: []int{12, 8}, Capacity: 64}, rng)
	case nn.KindFM:
		net, err = nn.NewFM(be, nn.FMConfig{Dims: dims, Rank: 3, Capacity: 64}, rng)
	case nn.KindCoSTCo:
		net, err = nn.NewCoSTCo(be, nn.CoSTCoConfig{Dims: dims, Rank: 4, Channels: 3, Capacity: 64}, rng)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer net.Free()
	m := filepath.Join(dir, "m")
	if err := model.Save(m, model.DefaultName, net, model.Meta{Version: "test", Role: "theta-prime"}); err != nil {
		t.Fatal(err)
	}
	return m
}

// foldCells writes n cells of new users (indices 20…24 of mode 1, and in
// the first 10 cells a new item, 15) with known items and times, plus
// cells of known entities only, to dir/name.
func foldCells(t *testing.T, dir, name string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# new users 20…24, one new item 15\n")
	seen := map[[3]int]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for k := 0; k < 160; k++ {
		c := [3]int{20 + rng.IntN(5), rng.IntN(15), rng.IntN(10)}
		if k < 10 {
			c[1] = 15
		}
		if k >= 150 {
			c[0] = rng.IntN(20) // known entities only
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		fmt.Fprintf(&b, "%d\t%d\t%d\t%g\n", c[0], c[1], c[2], 1+float64(c[0]%3)+0.5*float64(c[2]%2))
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tensorsOf loads the model at path and returns its named tensors.
func tensorsOf(t *testing.T, path string) (map[string]nn.ParamTensor, model.Meta) {
	t.Helper()
	net, meta, err := model.Load(path, cpu.New(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Free()
	ts, err := net.HostTensors()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]nn.ParamTensor{}
	for _, x := range ts {
		out[x.Name] = x
	}
	return out, meta
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestFoldIn: for every kind, dainx fold-in grows the modes to the new
// entities (5 users, 1 item), keeps every known row and every layer of
// the model bit for bit (-tune new), trains the new rows, reports the
// counts, and dainx predict -model M2 answers for the new users; with
// -tune all the known rows the cells touch move and the layers do not.
func TestFoldIn(t *testing.T) {
	for _, kind := range nn.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			m := foldModel(t, dir, kind)
			cells := foldCells(t, dir, "new.tsv")
			m2, rep := filepath.Join(dir, "m2"), filepath.Join(dir, "rep.json")
			code, stdout, stderr := runCLI("fold-in", "-model", m, "-input", cells, "-model-out", m2, "-report", rep, "-backend", "cpu", "-epochs", "15", "-batch", "32")
			if code != 0 {
				t.Fatalf("fold-in: exit %d: %s", code, stderr)
			}
			if !strings.Contains(stderr, "fold-in epoch") {
				t.Errorf("no progress on standard error: %q", stderr)
			}
			var r struct {
				Dims, DimsBefore, NewEntities  []int
				NCells, NSkipped, NTrain, NVal int
				Epochs                         int
				ValRMSE                        *float64
				Outputs                        []string
			}
			r2 := map[string]json.RawMessage{}
			if err := json.Unmarshal([]byte(stdout), &r2); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			for k, dst := range map[string]any{"dims": &r.Dims, "dims_before": &r.DimsBefore, "new_entities": &r.NewEntities,
				"n_cells": &r.NCells, "n_skipped": &r.NSkipped, "n_train": &r.NTrain, "n_val": &r.NVal, "epochs": &r.Epochs,
				"val_rmse": &r.ValRMSE, "outputs": &r.Outputs} {
				if err := json.Unmarshal(r2[k], dst); err != nil {
					t.Fatalf("report %s: %v", k, err)
				}
			}
			if fmt.Sprint(r.Dims, r.DimsBefore, r.NewEntities) != "[25 16 10] [20 15 10] [5 1 0]" {
				t.Errorf("dims %v, before %v, new %v", r.Dims, r.DimsBefore, r.NewEntities)
			}
			if r.NSkipped == 0 || r.NTrain+r.NVal+r.NSkipped != r.NCells || r.NVal == 0 || r.ValRMSE == nil || r.Epochs == 0 {
				t.Errorf("report: %+v", r)
			}
			if b, err := os.ReadFile(rep); err != nil || string(b) != stdout {
				t.Errorf("-report: %v", err)
			}
			before, _ := tensorsOf(t, m)
			after, meta := tensorsOf(t, m2)
			if meta.Kind != kind || fmt.Sprint(meta.Dims) != "[25 16 10]" || meta.Training["fold-in"] == nil {
				t.Errorf("M2's metadata: kind %s, dims %v, training %v", meta.Kind, meta.Dims, meta.Training)
			}
			for name, x := range before {
				y := after[name]
				if strings.HasPrefix(name, "embedding.") {
					E := x.Shape[1]
					if !sameBits(x.Data, y.Data[:len(x.Data)]) {
						t.Errorf("%s: a known row changed", name)
					}
					if len(y.Data) > len(x.Data) && sameBits(y.Data[len(x.Data):len(x.Data)+E], make([]float32, E)) {
						t.Errorf("%s: new rows of zeros", name)
					}
					continue
				}
				if !sameBits(x.Data, y.Data) {
					t.Errorf("%s changed", name)
				}
			}
			// predict answers for the new users (index 24, item 15).
			q := filepath.Join(dir, "q.tsv")
			os.WriteFile(q, []byte("24\t15\t3\n0\t0\t0\n"), 0o644)
			if code, out, stderr := runCLI("predict", "-model", m2, "-cells", q); code != 0 || strings.Count(out, "\n") != 2 {
				t.Errorf("predict -model M2: exit %d: %s %s", code, out, stderr)
			}
			if code, _, stderr := runCLI("predict", "-model", m, "-cells", q); code == 0 || !strings.Contains(stderr, "outside the model") {
				t.Errorf("predict -model M on a new user: exit %d: %s", code, stderr)
			}

			// -tune all: known rows move, layers do not.
			m3 := filepath.Join(dir, "m3")
			if code, _, stderr := runCLI("fold-in", "-model", m, "-input", cells, "-model-out", m3, "-backend", "cpu", "-epochs", "3", "-batch", "32", "-tune", "all", "-quiet"); code != 0 {
				t.Fatalf("fold-in -tune all: exit %d: %s", code, stderr)
			}
			all, _ := tensorsOf(t, m3)
			moved := false
			for name, x := range before {
				y := all[name]
				if strings.HasPrefix(name, "embedding.") {
					moved = moved || !sameBits(x.Data, y.Data[:len(x.Data)])
				} else if !sameBits(x.Data, y.Data) {
					t.Errorf("-tune all: %s changed", name)
				}
			}
			if !moved {
				t.Error("-tune all: no known row moved")
			}
		})
	}
}

// TestFoldInErrors: bad input is a named error and writes nothing: an
// index far above its mode (more new entities than cells) names the file
// and line, cells of another order name the first cell's line, -model-out
// may not be -model, flags are checked.
func TestFoldInErrors(t *testing.T) {
	dir := t.TempDir()
	m := foldModel(t, dir, nn.KindMLP)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	far := write("far.tsv", "# comment\n\n20\t1\t1\t3\n21\t2\t2\t4\n4000000\t1\t1\t2\n")
	order := write("order.tsv", "\n# c\n20\t1\t3\n21\t2\t4\n")
	good := write("good.tsv", "20\t1\t1\t3\n21\t2\t2\t4\n20\t3\t2\t4\n")
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-model", m, "-input", far, "-model-out", out}, 1, "far.tsv:5: index 4000000 of mode 1 would add 3999981 new entities to the model's 20 (indices 0…19), more than the file's 3 cells"},
		{[]string{"-model", m, "-input", order, "-model-out", out}, 1, "order.tsv:3: cells of order 2, the model's order is 3"},
		{[]string{"-model", m, "-input", far, "-model-out", out, "-index-base", "1"}, 1, "far.tsv:5: index 4000000 of mode 1 would add 3999980 new entities to the model's 20 (indices 1…20)"},
		{[]string{"-model", m, "-input", good, "-model-out", m}, 2, "-model-out " + m + " is the model read"},
		{[]string{"-model", filepath.Join(m, "model.json"), "-input", good, "-model-out", m}, 2, "is the model read"},
		{[]string{"-model", m, "-input", good}, 2, "-model and -model-out are required"},
		{[]string{"-model", m, "-model-out", out}, 2, "-input NEW is required"},
		{[]string{"-model", m, "-input", good, "-model-out", out, "-tune", "some"}, 2, `-tune "some": want new or all`},
		{[]string{"-model", m, "-input", good, "-model-out", out, "-val-frac", "1"}, 2, "-val-frac 1"},
		{[]string{"-model", m, "-input", good, "-model-out", out, "-lr", "0"}, 2, "-lr 0"},
		{[]string{"-model", filepath.Join(dir, "none"), "-input", good, "-model-out", out}, 1, "no such file"},
		{[]string{"-model", m, "-input", filepath.Join(dir, "absent.tsv"), "-model-out", out}, 1, "absent.tsv"},
	} {
		code, _, stderr := runCLI(append([]string{"fold-in", "-backend", "cpu", "-quiet"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d with %q", c.args, code, stderr, c.code, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v: -model-out written after an error", c.args)
		}
	}
	// The same files run: the model is written, the model read untouched.
	before, _ := os.ReadFile(filepath.Join(m, "model.safetensors"))
	if code, _, stderr := runCLI("fold-in", "-backend", "cpu", "-quiet", "-model", m, "-input", good, "-model-out", out, "-epochs", "2"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(m, "model.safetensors")); string(after) != string(before) {
		t.Error("the model read changed")
	}
}

// TestFoldInTable: a model trained on a table (augment -index) takes the
// new cells by ID: unknown IDs become new entities after the model's, in
// order of first appearance, a later day a new time bin; M2's
// dictionaries are the model's grown by them, its known rows and layers
// the model's bit for bit, and predict -index answers for the new IDs.
// Times before the model's first bin, indices for a table model and a
// table for a model of indices are errors.
func TestFoldInTable(t *testing.T) {
	dir := t.TempDir()
	var old, fresh strings.Builder
	old.WriteString("user,item,time,rating\n")
	fresh.WriteString("user,item,time,rating\n")
	for k := 0; k < 400; k++ {
		u, i, d := (k*7)%23, (k*11)%17, (k*5)%9
		line := fmt.Sprintf("u%d,item-%d,2021-03-%02dT10:00:00Z,%d\n", u, i, d+1, 1+(u+i)%5)
		if u < 20 {
			old.WriteString(line)
		} else {
			fresh.WriteString(line)
		}
	}
	fresh.WriteString("zz-new,item-new,2021-03-20T01:00:00Z,4\n")
	oldCSV, newCSV := filepath.Join(dir, "old.csv"), filepath.Join(dir, "new.csv")
	os.WriteFile(oldCSV, []byte(old.String()), 0o644)
	os.WriteFile(newCSV, []byte(fresh.String()), 0o644)
	m, m2 := filepath.Join(dir, "m"), filepath.Join(dir, "m2")
	if code, _, stderr := runCLI(append([]string{"augment", "-input", oldCSV, "-index", "user,item,time:day", "-value", "rating", "-backend", "cpu", "-model-out", m}, tiny...)...); code != 0 {
		t.Fatalf("augment: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI("fold-in", "-model", m, "-input", newCSV, "-index", "user,item,time", "-value", "rating", "-model-out", m2, "-backend", "cpu", "-quiet", "-epochs", "5")
	if code != 0 {
		t.Fatalf("fold-in: exit %d: %s", code, stderr)
	}
	var rep struct {
		Dims        []int `json:"dims"`
		NewEntities []int `json:"new_entities"`
	}
	json.Unmarshal([]byte(stdout), &rep)
	read := func(p string) (d struct {
		Modes []struct {
			Column string
			Size   int
			IDs    []any
		}
	}) {
		b, err := os.ReadFile(filepath.Join(p, "dictionaries.json"))
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(b, &d)
		return d
	}
	d0, d1 := read(m), read(m2)
	var newUsers []any
	for _, line := range strings.Split(fresh.String(), "\n")[1:] {
		if f := strings.Split(line, ","); len(f) == 4 && !strings.Contains(fmt.Sprint(newUsers), f[0]+" ") && !strings.HasSuffix(fmt.Sprint(newUsers), f[0]+"]") {
			newUsers = append(newUsers, f[0])
		}
	}
	if got := d1.Modes[0].IDs[len(d0.Modes[0].IDs):]; fmt.Sprint(got) != fmt.Sprint(newUsers) {
		t.Errorf("new users %v, want %v (order of first appearance)", got, newUsers)
	}
	if fmt.Sprint(d1.Modes[0].IDs[:len(d0.Modes[0].IDs)]) != fmt.Sprint(d0.Modes[0].IDs) {
		t.Error("the known users' IDs changed")
	}
	// Days 1…9 of March, then the 20th: bins 9…18 are new, 9…17 without cells.
	if fmt.Sprint(rep.NewEntities) != fmt.Sprintf("[%d 1 11]", len(newUsers)) || rep.Dims[2] != d1.Modes[2].Size || d1.Modes[2].Size != 20 {
		t.Errorf("new entities %v, dims %v, time bins %d", rep.NewEntities, rep.Dims, d1.Modes[2].Size)
	}
	before, _ := tensorsOf(t, m)
	after, _ := tensorsOf(t, m2)
	for name, x := range before {
		if !sameBits(x.Data, after[name].Data[:len(x.Data)]) {
			t.Errorf("%s: a known value changed", name)
		}
	}
	q := filepath.Join(dir, "q.csv")
	os.WriteFile(q, []byte("user,item,time\nzz-new,item-new,2021-03-20T05:00:00Z\nu3,item-1,2021-03-02T00:00:00Z\n"), 0o644)
	if code, out, stderr := runCLI("predict", "-model", m2, "-input", q, "-index", "user,item,time"); code != 0 || !strings.Contains(out, "zz-new,item-new,2021-03-20T00:00:00Z,") {
		t.Errorf("predict -index on M2: exit %d: %s %s", code, out, stderr)
	}

	early := filepath.Join(dir, "early.csv")
	os.WriteFile(early, []byte("user,item,time,rating\nnew1,item-1,2021-02-01T00:00:00Z,3\n"), 0o644)
	tsv := filepath.Join(dir, "cells.tsv")
	os.WriteFile(tsv, []byte("25\t1\t1\t3\n"), 0o644)
	indexModel := foldModel(t, t.TempDir(), nn.KindMLP)
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-model", m, "-input", early, "-index", "user,item,time", "-value", "rating"}, 1, `early.csv: row 1: column "time": the time bin starting 2021-02-01T00:00:00Z is before the model's first bin, 2021-03-01T00:00:00Z`},
		{[]string{"-model", m, "-input", tsv}, 2, "was trained on a table (it has dictionaries.json): give NEW as a table of IDs"},
		{[]string{"-model", indexModel, "-input", newCSV, "-index", "user,item,time", "-value", "rating"}, 2, "has no dictionaries.json"},
		{[]string{"-model", indexModel, "-input", newCSV}, 2, "is a csv table: name its mode columns with -index"},
		{[]string{"-model", m, "-input", newCSV, "-index", "user,item,time"}, 2, "-index needs -value"},
		{[]string{"-model", m, "-input", newCSV, "-index", "user,item", "-value", "rating"}, 2, "-index names 2 columns, the model has 3 modes"},
	} {
		code, _, stderr := runCLI(append([]string{"fold-in", "-backend", "cpu", "-quiet", "-model-out", out}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d with %q", c.args, code, stderr, c.code, c.want)
		}
	}
}
