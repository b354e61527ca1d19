package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nlpodyssey/safetensors"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
)

var dims = []int{6, 5, 4}

func newMLP(t *testing.T) *nn.Net {
	t.Helper()
	net, err := nn.NewMLP(cpu.New(), nn.Config{Dims: dims, Layers: []int{9, 8, 5}, Capacity: 7}, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.Free)
	return net
}

func newCoSTCo(t *testing.T) *nn.Net {
	t.Helper()
	net, err := nn.NewCoSTCo(cpu.New(), nn.CoSTCoConfig{Dims: dims, Rank: 3, Channels: 4, Capacity: 7}, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.Free)
	return net
}

// perturbed gives every parameter of net N(0, 0.3²) more (the FM's
// Linear layer starts at zero) and returns net.
func perturbed(t *testing.T, net *nn.Net, seed uint64) *nn.Net {
	t.Helper()
	p, err := net.HostParams()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range p {
		p[i] += float32(0.3 * rng.NormFloat64())
	}
	net.SetParams(p)
	return net
}

func newFM(t *testing.T) *nn.Net {
	t.Helper()
	net, err := nn.NewFM(cpu.New(), nn.FMConfig{Dims: dims, Rank: 3, Capacity: 7}, rand.New(rand.NewPCG(11, 12)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.Free)
	return perturbed(t, net, 13)
}

func newHybrid(t *testing.T) *nn.Net {
	t.Helper()
	net, err := nn.NewHybrid(cpu.New(), nn.Config{Dims: dims, Layers: []int{9, 8, 5}, Capacity: 7}, rand.New(rand.NewPCG(14, 15)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.Free)
	return perturbed(t, net, 16)
}

// cells returns k random cells of dims (k×N, 0-based).
func cells(k int) []int32 {
	rng := rand.New(rand.NewPCG(9, 10))
	var idx []int32
	for range k {
		for _, d := range dims {
			idx = append(idx, int32(rng.IntN(d)))
		}
	}
	return idx
}

func predict(t *testing.T, net *nn.Net, idx []int32) []float32 {
	t.Helper()
	s := net.NewSet(idx, make([]float64, len(idx)/net.Order()))
	defer s.Free()
	p, err := net.Predict(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestRoundTrip: Save then Load gives bit-identical parameters and
// predictions for an MLP, a CoSTCo, a factorization machine and a hybrid,
// the metadata describes the net, every path form loads, and the
// safetensors library reads the file.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		net  func(*testing.T) *nn.Net
	}{{"mlp", newMLP}, {"costco", newCoSTCo}, {"fm", newFM}, {"hybrid", newHybrid}} {
		t.Run(tc.name, func(t *testing.T) {
			net := tc.net(t)
			dir := filepath.Join(t.TempDir(), "m")
			meta := Meta{Version: "v9.9.9 (abc)", Role: "theta-prime", IndexBase: 1, Training: map[string]any{"seed": 3, "lr": 0.001}}
			if err := Save(dir, DefaultName, net, meta); err != nil {
				t.Fatal(err)
			}
			want, _ := net.HostParams()
			pred := predict(t, net, cells(23))
			for _, path := range []string{dir, filepath.Join(dir, "model"), filepath.Join(dir, "model.json"), filepath.Join(dir, "model.safetensors")} {
				got, m, err := Load(path, cpu.New(), 0) // the saved capacity, 7
				if err != nil {
					t.Fatalf("Load(%s): %v", path, err)
				}
				p, _ := got.HostParams()
				if !sameBits(p, want) {
					t.Errorf("Load(%s): parameters differ", path)
				}
				if q := predict(t, got, cells(23)); !sameBits(q, pred) {
					t.Errorf("Load(%s): predictions differ: %v vs %v", path, q, pred)
				}
				if got.Kind() != net.Kind() || got.Pairwise() != net.Pairwise() || got.Layout() != net.Layout() || got.Width() != net.Width() || !slices.Equal(got.Layers(), net.Layers()) || got.Capacity() != 7 || m.Capacity != 7 {
					t.Errorf("Load(%s): net %s %v %d %v", path, got.Kind(), got.Layout(), got.Width(), got.Layers())
				}
				got.Free()
				if m.Format != Format || m.FormatVersion != FormatVersion || m.Kind != tc.name || m.Role != "theta-prime" || m.Version != meta.Version ||
					m.IndexBase != 1 || m.Order != 3 || !slices.Equal(m.Dims, dims) || m.Width != net.Width() || m.Training["seed"] != 3.0 {
					t.Errorf("metadata %+v", m)
				}
				if (tc.name == "mlp" || tc.name == "hybrid") && (!slices.Equal(m.Layers, []int{9, 8, 5}) || m.Layout != LayoutModeMajor || m.Rank != 0) {
					t.Errorf("%s layers %v, layout %s, rank %d", tc.name, m.Layers, m.Layout, m.Rank)
				}
				if tc.name == "fm" && (m.Rank != 3 || m.Width != 4 || m.Layout != LayoutModeMajor || m.Layers != nil || m.Channels != 0 || len(m.LayerShapes) != 1 || m.LayerShapes[0] != [4]int{1, 12, 1, 0}) {
					t.Errorf("fm rank %d, width %d, layout %s, layers %v, shapes %v", m.Rank, m.Width, m.Layout, m.Layers, m.LayerShapes)
				}
				if tc.name == "costco" && (m.Rank != 3 || m.Channels != 4 || m.Layout != LayoutRankMajor || m.Layers != nil) {
					t.Errorf("costco rank %d, channels %d, layout %s", m.Rank, m.Channels, m.Layout)
				}
			}

			// The safetensors library reads what Save wrote: every tensor
			// F32, of its shape, holding the net's values.
			b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := safetensors.Deserialize(b)
			if err != nil {
				t.Fatal(err)
			}
			ts, _ := net.HostTensors()
			if st.Len() != len(ts) {
				t.Errorf("%d tensors in the file, want %d", st.Len(), len(ts))
			}
			for _, x := range ts {
				v, ok := st.Tensor(x.Name)
				if !ok {
					t.Errorf("no %s", x.Name)
					continue
				}
				shape := make([]int, len(v.Shape()))
				for i, d := range v.Shape() {
					shape[i] = int(d)
				}
				if v.DType() != safetensors.F32 || !slices.Equal(shape, x.Shape) {
					t.Errorf("%s: %s %v, want F32 %v", x.Name, v.DType(), shape, x.Shape)
				}
				if f := decode(v.Data()); !sameBits(f, x.Data) {
					t.Errorf("%s: values differ", x.Name)
				}
			}
			_, md, err := safetensors.ReadMetadata(b)
			if err != nil {
				t.Fatal(err)
			}
			info := md.Metadata()
			if info["dainx_format"] != Format || info["kind"] != tc.name || info["index_base"] != "1" || info["dims"] != "[6,5,4]" || info["format"] != "pt" {
				t.Errorf("__metadata__ %v", info)
			}
			if n := binary.LittleEndian.Uint64(b); n%8 != 0 {
				t.Errorf("header of %d bytes, not a multiple of 8", n)
			}
		})
	}
}

func decode(b []byte) []float32 {
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return f
}

// rewrite saves the tensors of dir/model.safetensors back after edit
// changes the map (name → view).
func rewrite(t *testing.T, dir string, edit func(map[string]safetensors.TensorView)) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.Deserialize(b)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]safetensors.TensorView{}
	for _, v := range st.Tensors() {
		m[v.Name] = v.TensorView
	}
	edit(m)
	out, err := safetensors.Serialize(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func view(t *testing.T, dt safetensors.DType, shape []uint64, data []byte) safetensors.TensorView {
	t.Helper()
	v, err := safetensors.NewTensorView(dt, shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLoadErrors: broken models are errors naming the file and what is
// wrong.
func TestLoadErrors(t *testing.T) {
	net := newMLP(t)
	good := t.TempDir()
	if err := Save(good, DefaultName, net, Meta{Role: "theta-prime"}); err != nil {
		t.Fatal(err)
	}
	js, _ := os.ReadFile(filepath.Join(good, "model.json"))
	st, _ := os.ReadFile(filepath.Join(good, "model.safetensors"))
	jsonEdit := func(old, new string) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			if !bytes.Contains(js, []byte(old)) {
				t.Fatalf("%q not in the metadata", old)
			}
			os.WriteFile(filepath.Join(dir, "model.json"), bytes.Replace(js, []byte(old), []byte(new), 1), 0o644)
		}
	}
	nan := make([]byte, 4*5)
	binary.LittleEndian.PutUint32(nan[8:], math.Float32bits(float32(math.NaN())))
	for _, tc := range []struct {
		name    string
		corrupt func(*testing.T, string)
		want    []string
	}{
		{"missing json", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "model.json")) },
			[]string{"model.json: no such file"}},
		{"missing safetensors", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "model.safetensors")) },
			[]string{"model.safetensors: no such file"}},
		{"bad json", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "model.json"), js[:len(js)/2], 0o644) },
			[]string{"model.json: not valid metadata JSON"}},
		{"format version", jsonEdit(`"format_version": 1`, `"format_version": 2`),
			[]string{"model.json: format version 2; this dainx reads version 1"}},
		{"format", jsonEdit(`"format": "dainx-model"`, `"format": "other"`), []string{`format "other", want "dainx-model"`}},
		{"kind", jsonEdit(`"kind": "mlp"`, `"kind": "rnn"`), []string{`kind "rnn", want mlp, costco, fm, hybrid, bayes-fm or ensemble`}},
		{"order", jsonEdit(`"order": 3`, `"order": 2`), []string{"order 2 with dims [6 5 4]"}},
		{"layers", jsonEdit(`"layers": [`+"\n    9", `"layers": [`+"\n    12"), []string{"embedding_width 3, but layers[0] = 12 for order 3 gives 4"}},
		{"layer shapes", jsonEdit(`"layer_shapes": [`+"\n    [\n      1,\n      9,\n      8", `"layer_shapes": [`+"\n    [\n      1,\n      9,\n      7"),
			[]string{"layer_shapes[0] = [1 9 7 1]", "[1 9 8 1]"}},
		{"layout", jsonEdit(`"layout": "mode-major"`, `"layout": "rank-major"`), []string{`layout "rank-major"; a model of kind mlp has "mode-major"`}},
		{"index base", jsonEdit(`"index_base": 0`, `"index_base": 2`), []string{"index_base 2, want 0 or 1"}},
		{"truncated", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "model.safetensors"), st[:len(st)-10], 0o644)
		},
			[]string{"model.safetensors: tensor \"layers.2.weight\" needs 20 bytes at bytes 684…704 of the data but the file holds 694 bytes of data (truncated?)"}},
		{"truncated header", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "model.safetensors"), st[:20], 0o644) },
			[]string{"model.safetensors: the metadata", "describes 176 parameters, which need 712 bytes, but the file holds 20 bytes"}},
		{"missing tensor", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]safetensors.TensorView) { delete(m, "layers.1.bias") })
		}, []string{"model.safetensors: no tensor layers.1.bias (want shape [5])"}},
		{"wrong shape", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]safetensors.TensorView) {
				m["layers.1.weight"] = view(t, safetensors.F32, []uint64{8, 5}, m["layers.1.weight"].Data())
			})
		}, []string{"model.safetensors: layers.1.weight has shape [8 5], want [5 8]"}},
		{"wrong dtype", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]safetensors.TensorView) {
				m["layers.2.bias"] = view(t, safetensors.F64, []uint64{1}, make([]byte, 8))
			})
		}, []string{`layers.2.bias has dtype "F64", want F32`}},
		{"non-finite", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]safetensors.TensorView) {
				m["layers.1.bias"] = view(t, safetensors.F32, []uint64{5}, nan)
			})
		}, []string{"layers.1.bias holds a non-finite value (NaN at element 2)"}},
		{"unexpected tensor", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]safetensors.TensorView) {
				m["layers.3.bias"] = view(t, safetensors.F32, []uint64{1}, make([]byte, 4))
			})
		}, []string{`unexpected tensor "layers.3.bias"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "model.json"), js, 0o644)
			os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644)
			tc.corrupt(t, dir)
			m, _, err := Load(dir, cpu.New(), 4)
			if err == nil {
				m.Free()
				t.Fatalf("loaded")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to contain %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// TestSaveErrors: Save refuses a non-finite parameter and a name with a
// directory, and writes nothing then.
func TestSaveErrors(t *testing.T) {
	net := newMLP(t)
	dir := t.TempDir()
	if err := Save(dir, "a/b", net, Meta{}); err == nil || !strings.Contains(err.Error(), "without a directory") {
		t.Errorf("name with a slash: %v", err)
	}
	p, _ := net.HostParams()
	p[len(p)-1] = float32(math.Inf(1))
	net.SetParams(p)
	err := Save(dir, "x", net, Meta{})
	if err == nil || !strings.Contains(err.Error(), "layers.2.bias holds a non-finite value (+Inf at element 0); not saved") {
		t.Errorf("non-finite: %v", err)
	}
	if fs, _ := os.ReadDir(dir); len(fs) != 0 {
		t.Errorf("files left: %v", fs)
	}
}

// TestNumpy reads a saved MLP, CoSTCo, FM and hybrid with numpy alone
// (/usr/bin/python3, the safetensors layout parsed by hand), checks shapes
// and values against the net's tensors, and recomputes the models' forward
// pass as the package documentation describes it, comparing it with
// Predict.
func TestNumpy(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skipf("%s with numpy: %v", py, err)
	}
	const script = `
import json, struct, sys
import numpy as np
path, cells_json, want_json, tensors_json = sys.argv[1:5]
meta = json.load(open(path + ".json"))
b = open(path + ".safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
header, data = json.loads(b[8:8 + n]), b[8 + n:]
T = {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype="<f4").reshape(v["shape"])
     for k, v in header.items() if k != "__metadata__"}
for name, (shape, first, last) in json.loads(tensors_json).items():
    assert list(T[name].shape) == shape, (name, T[name].shape, shape)
    assert T[name].dtype == np.float32
    assert T[name].ravel()[0] == np.float32(first) and T[name].ravel()[-1] == np.float32(last), name
c = np.array(json.loads(cells_json)).reshape(-1, meta["order"])
N, L = meta["order"], len(meta["layer_shapes"])
E = [T["embedding.%d" % i][c[:, i]].astype(np.float64) for i in range(N)]   # N × (B, E)
if meta["layout"] == "mode-major":               # mlp, fm, hybrid
    x = np.concatenate(E, axis=1)                  # (B, N·E)
else:
    x = np.stack(E, axis=2)                        # (B, R, N): row r holds every mode's r-th component
for l in range(L):
    W, bias = T["layers.%d.weight" % l].astype(np.float64), T["layers.%d.bias" % l]
    x = x @ W.T + bias
    if l < L - 1:
        x = np.maximum(x, 0)
    x = x.reshape(len(c), -1)                      # a cell's rows × out values, row-major
if meta["kind"] in ("fm", "hybrid"):
    K = meta["embedding_width"] - 1                # factors 0…K−1, the bias in column K
    x[:, 0] += sum(e[:, K] for e in E)
    x[:, 0] += sum((E[n][:, :K] * E[m][:, :K]).sum(axis=1) for n in range(N) for m in range(n + 1, N))
want = np.array(json.loads(want_json))
rel = np.max(np.abs(x[:, 0] - want) / np.maximum(np.abs(want), 1e-3))
assert rel < 1e-5, rel
print(meta["kind"], len(want), "cells, max relative difference", rel)
`
	for _, tc := range []struct {
		name string
		net  func(*testing.T) *nn.Net
	}{{"mlp", newMLP}, {"costco", newCoSTCo}, {"fm", newFM}, {"hybrid", newHybrid}} {
		t.Run(tc.name, func(t *testing.T) {
			net := tc.net(t)
			dir := t.TempDir()
			if err := Save(dir, tc.name, net, Meta{Role: "theta"}); err != nil {
				t.Fatal(err)
			}
			idx := cells(31)
			pred := predict(t, net, idx)
			ts, _ := net.HostTensors()
			check := map[string][3]any{}
			for _, x := range ts {
				check[x.Name] = [3]any{x.Shape, float64(x.Data[0]), float64(x.Data[len(x.Data)-1])}
			}
			args := []string{"-c", script, filepath.Join(dir, tc.name), js(idx), js(pred), js(check)}
			out, err := exec.Command(py, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("numpy: %v\n%s", err, out)
			}
			t.Logf("numpy: %s", strings.TrimSpace(string(out)))
		})
	}
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
