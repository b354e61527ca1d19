package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/dainx/dainx/internal/realdata"
)

// E2ERes is one `dainx augment` run.
type E2ERes struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	// Backend and Precision are the run's -backend and -precision (absent
	// in files from before they were recorded: cpu, and dainx's default).
	Backend   string `json:"backend,omitempty"`
	Precision string `json:"precision,omitempty"`
	// Device is the report's device: for the CPU the threads and the
	// kernels chosen (e.g. "2 threads, avx512 12×32 sgemm, avx-512
	// narrow layers").
	Device       string  `json:"device,omitempty"`
	Seconds      float64 `json:"seconds"`
	Wall         float64 `json:"wall_seconds"`
	NTrain       int     `json:"n_train"`
	EpochsBefore int     `json:"epochs_before"`
	EpochSec     float64 `json:"mean_epoch_seconds"`
	CellsPerSec  float64 `json:"train_cells_per_s"`
	SecPerStep   float64 `json:"seconds_per_step"`
	MaxRSSMiB    float64 `json:"max_rss_mib"`
	RMSEBefore   float64 `json:"rmse_before"`
	RMSEAfter    float64 `json:"rmse_after"`
	// Parts is the report's "seconds" map: train, influence, entity,
	// sample, predict, retrain, total.
	Parts   any    `json:"seconds_by_step"`
	Skipped string `json:"skipped,omitempty"`
}

// e2eOpts are the backend flags of every end-to-end run.
type e2eOpts struct {
	backend, precision string
}

// endToEndRuns runs the end-to-end runs named in runs.
func endToEndRuns(dainx string, o e2eOpts, runs map[string]bool, mlLayers string, mmEpochs int, mmFull bool) []E2ERes {
	var res []E2ERes
	if runs["demo"] {
		res = append(res, endToEnd(dainx, "demo (synthetic_10K, default flags)", nil, o))
	}
	data := realdata.Dir()
	if runs["movielens"] {
		var ml []string
		if mlLayers != "" {
			ml = []string{"-layers", mlLayers}
		}
		res = append(res, endToEndFile(dainx, "movielens_latest_small", filepath.Join(data, "movielens_latest_small.tsv.gz"), ml, o))
	}
	if runs["movingmnist"] {
		mm := filepath.Join(data, "movingmnist100.tsv.gz")
		if mmEpochs > 0 {
			res = append(res, endToEndFile(dainx, fmt.Sprintf("movingmnist100 (-epochs %d, memory)", mmEpochs), mm, []string{"-epochs", fmt.Sprint(mmEpochs)}, o))
		}
		if mmFull {
			res = append(res, endToEndFile(dainx, "movingmnist100 (default flags)", mm, nil, o))
		}
	}
	return res
}

func endToEndFile(dainx, name, path string, args []string, o e2eOpts) E2ERes {
	if _, err := os.Stat(path); err != nil {
		logf("%s: skipped: %v", name, err)
		return E2ERes{Name: name, Backend: o.backend, Precision: o.precision, Skipped: fmt.Sprintf("%v (set DAINX_DATA to the directory holding it)", err)}
	}
	return endToEnd(dainx, name, append([]string{"-input", path}, args...), o)
}

// endToEnd runs `dainx augment` with args and reads its report.
func endToEnd(dainx, name string, args []string, o e2eOpts) E2ERes {
	res := E2ERes{Name: name, Args: args, Backend: o.backend, Precision: o.precision}
	dir, err := os.MkdirTemp("", "benchrun")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "report.json")
	full := []string{"augment", "-backend", o.backend}
	if o.precision != "" {
		full = append(full, "-precision", o.precision)
	}
	full = append(append(full, "-quiet", "-report", report), args...)
	cmd := exec.Command(dainx, full...)
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	logf("%s: %s %s", name, dainx, strings.Join(full, " "))
	start := time.Now()
	err = cmd.Run()
	res.Wall = time.Since(start).Seconds()
	if err != nil {
		res.Skipped = fmt.Sprintf("dainx failed: %v: %s", err, stderr.String())
		logf("%s: %s", name, res.Skipped)
		return res
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSSMiB = float64(ru.Maxrss) / 1024 // kilobytes on Linux
	}
	b, err := os.ReadFile(report)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	var rep struct {
		Device   string             `json:"device"`
		NTrain   int                `json:"n_train"`
		Batch    int                `json:"batch"`
		Before   float64            `json:"rmse_before"`
		After    float64            `json:"rmse_after"`
		Seconds  map[string]float64 `json:"seconds"`
		EpochLog []struct {
			Seconds float64 `json:"seconds"`
		} `json:"history_before"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		res.Skipped = err.Error()
		return res
	}
	res.Seconds, res.NTrain, res.RMSEBefore, res.RMSEAfter, res.Parts = rep.Seconds["total"], rep.NTrain, rep.Before, rep.After, rep.Seconds
	res.Device = rep.Device
	res.EpochsBefore = len(rep.EpochLog)
	if len(rep.EpochLog) > 0 {
		// The median epoch: the first pays for warm-up.
		secs := make([]float64, len(rep.EpochLog))
		for i, e := range rep.EpochLog {
			secs[i] = e.Seconds
		}
		sort.Float64s(secs)
		res.EpochSec = secs[len(secs)/2]
		res.CellsPerSec = float64(rep.NTrain) / res.EpochSec
		steps := (rep.NTrain + rep.Batch - 1) / max(rep.Batch, 1)
		res.SecPerStep = res.EpochSec / float64(steps)
	}
	logf("%s: %.1f s, epoch %.2f s (%.0f cells/s, %.1f ms per step incl. validation), max RSS %.0f MiB; %s",
		name, res.Seconds, res.EpochSec, res.CellsPerSec, res.SecPerStep*1e3, res.MaxRSSMiB, res.Device)
	return res
}

// stages are the report's seconds, in the pipeline's order.
var stages = []string{"train", "influence", "entity", "sample", "predict", "retrain", "total"}

// stageSeconds returns Parts as a map, whether fresh (map[string]float64)
// or read back from JSON (map[string]any).
func (e E2ERes) stageSeconds() map[string]float64 {
	switch m := e.Parts.(type) {
	case map[string]float64:
		return m
	case map[string]any:
		out := map[string]float64{}
		for k, v := range m {
			if f, ok := v.(float64); ok {
				out[k] = f
			}
		}
		return out
	}
	return nil
}
