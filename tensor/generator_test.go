package tensor

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestGenerator: a generator's JSON reads back as itself; its CP model
// gives every cell of the noise-free Synthetic tensor its value bit for
// bit, and Tensor is Synthetic with its arguments.
func TestGenerator(t *testing.T) {
	g, err := NewGenerator([]int{30, 20, 10, 5}, 2000, 3, 0, 7)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := g.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeGenerator(&b, "g.json")
	if err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("read back %v, %v; want %v", back, err, g)
	}
	x, _ := Synthetic([]int{30, 20, 10, 5}, 2000, 3, 0, 7)
	m, err := g.CP()
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < x.NNZ(); k++ {
		if v := m.Value(x.Cell(k)); v != x.Val[k] {
			t.Fatalf("cell %v: the generator gives %v, Synthetic %v", x.Cell(k), v, x.Val[k])
		}
	}
	noisy, _ := NewGenerator([]int{30, 20, 10, 5}, 2000, 3, 0.2, 7)
	y, err := noisy.Tensor()
	z, _ := Synthetic([]int{30, 20, 10, 5}, 2000, 3, 0.2, 7)
	if err != nil || !reflect.DeepEqual(y, z) {
		t.Errorf("Tensor is not Synthetic: %v", err)
	}
	if s := noisy.String(); s != "cp-uniform dims [30 20 10 5] nnz 2000 rank 3 noise 0.2 seed 7" {
		t.Errorf("String %q", s)
	}
	if s := (*Generator)(nil).String(); s != "none" {
		t.Errorf("nil String %q", s)
	}
}

// TestDecodeGeneratorUntrusted: a generator file is untrusted input:
// anything but one object with Generator's fields, of a known format and
// arguments Synthetic accepts, is an error naming the file and the cause.
func TestDecodeGeneratorUntrusted(t *testing.T) {
	ok := `"format":"dainx synth generator","version":1,"model":"cp-uniform"`
	for _, c := range []struct{ in, want string }{
		{``, "not a generator file"},
		{`[1,2]`, "not a generator file"},
		{`{` + ok + `,"dims":[4,4],"nnz":4,"rank":1,"noise":0,"seed":1,"extra":1}`, `unknown field "extra"`},
		{`{` + ok + `,"dims":[4,4],"nnz":4,"rank":1,"noise":0,"seed":1} {}`, "text after"},
		{`{"format":"x","version":1,"model":"cp-uniform","dims":[4,4],"nnz":4,"rank":1}`, `format "x"`},
		{`{"format":"dainx synth generator","version":2,"model":"cp-uniform","dims":[4,4],"nnz":4,"rank":1}`, "version 2"},
		{`{"format":"dainx synth generator","version":1,"model":"tucker","dims":[4,4],"nnz":4,"rank":1}`, `model "tucker"`},
		{`{` + ok + `,"dims":[4,4],"nnz":4,"rank":1,"noise":-1,"seed":1}`, "noise -1"},
		{`{` + ok + `,"dims":[4,0],"nnz":4,"rank":1,"noise":0,"seed":1}`, "mode 2 has size 0"},
		{`{` + ok + `,"dims":[],"nnz":4,"rank":1,"noise":0,"seed":1}`, "no modes"},
		{`{` + ok + `,"dims":[4,4],"nnz":9,"rank":1,"noise":0,"seed":1}`, "at most half"},
		{`{` + ok + `,"dims":[4,4],"nnz":4,"rank":0,"noise":0,"seed":1}`, "rank 0"},
		{`{` + ok + `,"dims":[100000,100000],"nnz":4,"rank":1048576,"noise":0,"seed":1}`, "factor values"},
		{`{` + ok + `,"dims":[4,4],"nnz":4,"rank":1,"noise":0,"seed":-1}`, "not a generator file"},
		{`{` + ok + `,"dims":[4,4],"nnz":4,"rank":1,"noise":0,"seed":1}` + strings.Repeat(" ", maxGeneratorFile), "more than 1048576 bytes"},
	} {
		_, err := DecodeGenerator(strings.NewReader(c.in), "g.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "g.json: ") {
			in := c.in
			if len(in) > 100 {
				in = in[:100] + "…"
			}
			t.Errorf("%s: %v; want an error naming g.json with %q", in, err, c.want)
		}
	}
}
