package main

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
)

// savedModel writes a small MLP as dir/model.{json,safetensors}.
func savedModel(t *testing.T) string {
	t.Helper()
	net, err := nn.NewMLP(cpu.New(), nn.Config{Dims: []int{6, 5, 4}, Layers: []int{9, 8}, Capacity: 8}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	defer net.Free()
	dir := t.TempDir()
	if err := model.Save(dir, model.DefaultName, net, model.Meta{Role: "theta-prime"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPredictUntrustedModel: a hostile model through the library (what
// dainx_predict and dainx.predict call) is an input error naming the
// file, never a crash: dims of 4·10¹², a truncated safetensors file, a
// header whose offsets lie, and a batch past the cap. nnz 0 checks a good
// model and reports its order and dims.
func TestPredictUntrustedModel(t *testing.T) {
	good := savedModel(t)
	js, _ := os.ReadFile(filepath.Join(good, "model.json"))
	st, _ := os.ReadFile(filepath.Join(good, "model.safetensors"))
	var meta map[string]any
	json.Unmarshal(js, &meta)
	meta["dims"] = []any{6, 4e12, 4}
	hostile, _ := json.Marshal(meta)
	n := binary.LittleEndian.Uint64(st)
	hdr := strings.Replace(string(st[8:8+n]), `"data_offsets":[0,72]`, `"data_offsets":[0,16000000000]`, 1)
	if hdr == string(st[8:8+n]) {
		t.Fatalf("no embedding.0 offsets [0,72] in %s", st[8:8+n])
	}
	lying := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	lying = append(append(lying, hdr...), st[8+n:]...)
	for _, tc := range []struct {
		name, file string
		data       []byte
		options    string
		want       string
	}{
		{"dims 4e12", "model.json", hostile, "", "model.json: dims[1] = 4000000000000: above the limit 2147483647"},
		{"truncated", "model.safetensors", st[:len(st)-9], "", "model.safetensors: tensor"},
		{"truncated header", "model.safetensors", st[:12], "", "model.safetensors: the metadata"},
		{"header lies", "model.safetensors", lying, "", "model.safetensors: tensor \"embedding.0\": data_offsets [0, 16000000000] span 16 GB"},
		{"batch", "", nil, `{"batch": 1000000000000}`, `option "batch": 1000000000000: want 1…16777216 cells`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "model.json"), js, 0o644)
			os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644)
			if tc.file != "" {
				os.WriteFile(filepath.Join(dir, tc.file), tc.data, 0o644)
			}
			var err error
			perr := safely(func() error {
				_, _, err = predictCells(dir, []int32{0, 0, 0}, 1, 3, tc.options)
				return nil
			})
			if perr != nil {
				t.Fatalf("panicked: %v", perr)
			}
			if err == nil || codeOf(err) != codeInput || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (code %d), want an input error containing %q", err, codeOf(err), tc.want)
			}
			if tc.file != "" && !strings.Contains(err.Error(), filepath.Join(dir, tc.file)) {
				t.Errorf("error %q does not name %s", err, tc.file)
			}
		})
	}
	_, js2, err := predictCells(good, nil, 0, 0, "")
	if err != nil {
		t.Fatalf("nnz 0: %v", err)
	}
	var rep struct {
		Order int   `json:"order"`
		Dims  []int `json:"dims"`
	}
	if json.Unmarshal(js2, &rep); rep.Order != 3 || len(rep.Dims) != 3 || rep.Dims[1] != 5 {
		t.Errorf("nnz 0: report %s", js2)
	}
}

// TestSafelyOneLine: a recovered panic is one line without a stack trace,
// its value capped.
func TestSafelyOneLine(t *testing.T) {
	err := safely(func() error { panic("boom\n" + strings.Repeat("x", 1000)) })
	msg := err.Error()
	if !strings.HasPrefix(msg, "dainx: internal error: boom x") || strings.Contains(msg, "\n") || strings.Contains(msg, "goroutine") || len(msg) > 400 || codeOf(err) != codeRun {
		t.Errorf("safely: %q", msg)
	}
}
