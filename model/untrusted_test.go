package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
)

// savedMLP saves the test MLP into a new directory and returns the
// directory with its model.json and model.safetensors bytes.
func savedMLP(t testing.TB) (string, []byte, []byte) {
	t.Helper()
	var net = newMLP(t.(*testing.T))
	dir := t.TempDir()
	if err := Save(dir, DefaultName, net, Meta{Role: "theta-prime"}); err != nil {
		t.Fatal(err)
	}
	js, st := modelFiles(t, dir)
	return dir, js, st
}

// modelFiles returns the bytes of dir's model.json and model.safetensors.
func modelFiles(t testing.TB, dir string) ([]byte, []byte) {
	t.Helper()
	js, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return js, st
}

// editMeta returns the metadata js with edit applied to its JSON object.
func editMeta(t *testing.T, js []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// header splits a safetensors file into its header object and its data.
func header(t *testing.T, st []byte) (map[string]any, []byte) {
	t.Helper()
	n := binary.LittleEndian.Uint64(st)
	var h map[string]any
	if err := json.Unmarshal(st[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	return h, st[8+n:]
}

// withHeader is a safetensors file of header h and data.
func withHeader(t *testing.T, h map[string]any, data []byte) []byte {
	t.Helper()
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hb)))
	return append(append(out, hb...), data...)
}

// TestLoadUntrusted: a model.json or safetensors file whose sizes lie
// (to the limits, to each other or to the file's size) is an error naming
// the file and the field, given before anything is allocated from the
// lie: without the checks, dims[1] = 4·10¹² asks the runtime for 48 TB
// and kills the process.
func TestLoadUntrusted(t *testing.T) {
	_, js, st := savedMLP(t)
	meta := func(edit func(map[string]any)) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "model.json"), editMeta(t, js, edit), 0o644)
		}
	}
	tensors := func(edit func(h map[string]any, data []byte) []byte) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			h, data := header(t, st)
			os.WriteFile(filepath.Join(dir, "model.safetensors"), edit(h, data), 0o644)
		}
	}
	entry := func(h map[string]any, name string) map[string]any { return h[name].(map[string]any) }
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name     string
		corrupt  func(*testing.T, string)
		capacity int
		want     []string
	}{
		{"dims 4e12", meta(func(m map[string]any) { m["dims"] = []any{6, 4e12, 4} }), 0,
			[]string{"model.json: dims[1] = 4000000000000: above the limit 2147483647"}},
		{"dims sum", meta(func(m map[string]any) { m["dims"] = []any{2e9, 2e9, 4} }), 0,
			[]string{"model.json: dims [2000000000 2000000000 4]: 4000000000 rows over all modes, above the limit 2147483647"}},
		{"dims negative", meta(func(m map[string]any) { m["dims"] = []any{6, -5, 4} }), 0,
			[]string{"model.json: dims[1] = -5: a mode size must be ≥ 1"}},
		{"dims within limits, file too small", meta(func(m map[string]any) { m["dims"] = []any{6, 2e9, 4} }), 0,
			[]string{"model.safetensors: the metadata", "model.json describes 6000000161 parameters, which need 24 GB, but the file holds 1.58 kB"}},
		{"order", meta(func(m map[string]any) { m["order"] = 1e6 }), 0,
			[]string{"model.json: order = 1000000: above the limit 1024"}},
		{"embedding width", meta(func(m map[string]any) { m["embedding_width"] = 1e12 }), 0,
			[]string{"model.json: embedding_width = 1000000000000: above the limit 1048576"}},
		{"layer width", meta(func(m map[string]any) { m["layers"] = []any{9, 8e15, 5} }), 0,
			[]string{"model.json: layers[1] = 8000000000000000: above the limit 1048576"}},
		{"many layers", meta(func(m map[string]any) { m["layers"] = make([]any, 5000) }), 0,
			[]string{"model.json: layers has 5000 widths: above the limit 1024"}},
		{"capacity", meta(func(m map[string]any) { m["capacity"] = 1e12 }), 0,
			[]string{"model.json: capacity = 1000000000000: want 0…16777216"}},
		{"activations", meta(func(m map[string]any) { m["layers"] = []any{9, 1 << 20, 5}; delete(m, "layer_shapes") }), 1 << 24,
			[]string{"model.json: batch capacity 16777216 × 1048576 values per cell in the widest layer: above the limit of 4294967296 activations"}},
		{"batch", func(*testing.T, string) {}, 1 << 30,
			[]string{"model.json: batch capacity 1073741824: want 1…16777216 cells"}},
		{"number too large for int", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "model.json"), bytes.Replace(js, []byte(`"order": 3`), []byte(`"order": 1`+strings.Repeat("0", 3000)), 1), 0o644)
		}, 0, []string{"model.json: not valid metadata JSON", "…"}},
		{"long kind echoed short", meta(func(m map[string]any) { m["kind"] = long }), 0,
			[]string{`model.json: kind "` + strings.Repeat("x", 80) + `"…, want mlp, costco, fm, hybrid, bayes-fm or ensemble`}},
		{"metadata not a file", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "model.json"))
			os.Mkdir(filepath.Join(dir, "model.json"), 0o755)
		}, 0, []string{"model.json: not a regular file"}},
		{"header length past the end", tensors(func(h map[string]any, data []byte) []byte {
			b := withHeader(t, h, data)
			binary.LittleEndian.PutUint64(b, 1<<62)
			return b
		}), 0, []string{"model.safetensors: not a complete safetensors file of 1576 bytes (truncated?): its header length 4611686018427387904 runs past the end"}},
		{"header not JSON", tensors(func(h map[string]any, data []byte) []byte {
			b := withHeader(t, h, data)
			b[8] = '['
			return b
		}), 0, []string{"model.safetensors: not a complete safetensors file of 1576 bytes", "header is not a JSON object"}},
		{"offsets lie about the size", tensors(func(h map[string]any, data []byte) []byte {
			entry(h, "layers.2.bias")["data_offsets"] = []any{700, 16e9}
			return withHeader(t, h, data)
		}), 0, []string{`model.safetensors: tensor "layers.2.bias": data_offsets [700, 16000000000] span 16 GB, its shape [1] needs 4 bytes`}},
		{"offsets past the end", tensors(func(h map[string]any, data []byte) []byte {
			entry(h, "layers.2.bias")["data_offsets"] = []any{2e12, 2e12 + 4}
			return withHeader(t, h, data)
		}), 0, []string{`model.safetensors: tensor "layers.2.bias" needs 4 bytes at bytes 2000000000000…2000000000004 of the data but the file holds 704 bytes of data`}},
		{"offsets overlap", tensors(func(h map[string]any, data []byte) []byte {
			entry(h, "layers.2.bias")["data_offsets"] = []any{0, 4}
			return withHeader(t, h, data)
		}), 0, []string{"model.safetensors: data_offsets overlap or leave a gap"}},
		{"offsets end before they begin", tensors(func(h map[string]any, data []byte) []byte {
			entry(h, "layers.2.bias")["data_offsets"] = []any{8, 4}
			return withHeader(t, h, data)
		}), 0, []string{`tensor "layers.2.bias": data_offsets [8, 4] end before they begin`}},
		{"huge shape", tensors(func(h map[string]any, data []byte) []byte {
			entry(h, "embedding.0")["shape"] = []any{1e18, 1e18}
			return withHeader(t, h, data)
		}), 0, []string{"model.safetensors: embedding.0 has shape [1000000000000000000 1000000000000000000], want [6 3]"}},
		{"trailing data", tensors(func(h map[string]any, data []byte) []byte {
			return withHeader(t, h, append(data, make([]byte, 64)...))
		}), 0, []string{"model.safetensors: 64 bytes of data after the tensors' end at 704"}},
		{"long tensor name echoed short", tensors(func(h map[string]any, data []byte) []byte {
			h[long] = map[string]any{"dtype": "F32", "shape": []any{0}, "data_offsets": []any{704, 704}}
			return withHeader(t, h, data)
		}), 0, []string{`unexpected tensor "` + strings.Repeat("x", 80) + `"…`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "model.json"), js, 0o644)
			os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644)
			tc.corrupt(t, dir)
			m, _, err := Load(dir, cpu.New(), tc.capacity)
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
			if len(err.Error()) > 600 {
				t.Errorf("error of %d bytes: echoed strings are not capped", len(err.Error()))
			}
		})
	}
}

// TestLoadPairwiseUntrusted: the metadata of a factorization machine or a
// hybrid whose rank, width or layers contradict each other (or the
// limits) is an error naming the file and the field, and a saved FM's
// tensors under another kind's metadata are refused.
func TestLoadPairwiseUntrusted(t *testing.T) {
	save := func(net *nn.Net) (js, st []byte) {
		dir := t.TempDir()
		if err := Save(dir, DefaultName, net, Meta{Role: "theta"}); err != nil {
			t.Fatal(err)
		}
		js, _ = os.ReadFile(filepath.Join(dir, "model.json"))
		st, _ = os.ReadFile(filepath.Join(dir, "model.safetensors"))
		return js, st
	}
	fmJS, fmST := save(newFM(t))
	hyJS, hyST := save(newHybrid(t))
	for _, tc := range []struct {
		name   string
		js, st []byte
		edit   func(map[string]any)
		want   string
	}{
		{"fm rank 0", fmJS, fmST, func(m map[string]any) { m["rank"] = 0 }, "fm rank 0: it must be positive"},
		{"fm width", fmJS, fmST, func(m map[string]any) { m["embedding_width"] = 5 }, "embedding_width 5, but an fm's is its rank 3 + 1"},
		{"fm rank huge", fmJS, fmST, func(m map[string]any) { m["rank"] = 1e12 }, "rank = 1000000000000: above the limit 1048576"},
		{"fm rank and width grown", fmJS, fmST, func(m map[string]any) { m["rank"], m["embedding_width"] = 1e6, 1e6+1; delete(m, "layer_shapes") },
			"describes 18000019 parameters, which need 72 MB, but the file holds"},
		{"fm layer shapes", fmJS, fmST, func(m map[string]any) { m["layer_shapes"] = []any{[]any{1, 12, 4, 1}, []any{1, 4, 1, 0}} },
			"2 layer_shapes, the fm the other fields describe has 1 layers"},
		{"fm read as an mlp", fmJS, fmST, func(m map[string]any) { m["kind"] = "mlp" }, "layers []: no layers given"},
		{"hybrid width 1", hyJS, hyST, func(m map[string]any) {
			m["embedding_width"] = 1
			m["layers"] = []any{3, 8, 5}
			delete(m, "layer_shapes")
		},
			"embedding_width 1: a hybrid's must be at least 2"},
		{"hybrid layers", hyJS, hyST, func(m map[string]any) { m["layers"] = []any{12, 8, 5} }, "embedding_width 3, but layers[0] = 12 for order 3 gives 4"},
		{"hybrid read as an fm", hyJS, hyST, func(m map[string]any) { m["kind"] = "fm"; m["rank"] = 2; delete(m, "layer_shapes") },
			"unexpected tensor \"layers.1.bias\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "model.json"), editMeta(t, tc.js, tc.edit), 0o644)
			os.WriteFile(filepath.Join(dir, "model.safetensors"), tc.st, 0o644)
			m, _, err := Load(dir, cpu.New(), 0)
			if err == nil {
				m.Free()
				t.Fatalf("loaded")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q, want it to name the file and contain %q", err, tc.want)
			}
		})
	}
}
