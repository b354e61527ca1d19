package main

// The library's logic in plain Go (no cgo), so that `go test` covers it
// with CGO_ENABLED=0 too; export.go converts between it and C.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	dxversion "github.com/dainx/dainx/internal/version"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/tensor"
)

// Error classes, the non-zero return codes of the C API (dainx.h
// DAINX_EINPUT, DAINX_ERUN, DAINX_ECANCELLED).
const (
	codeInput     = 1 // bad cells, bad options, a configuration that cannot work
	codeRun       = 2 // the run failed: device error, too few reachable cells, internal error
	codeCancelled = 3 // the progress callback stopped the run
)

// libError is an error with its C API code.
type libError struct {
	code int
	msg  string
}

func (e *libError) Error() string { return e.msg }

func inputErr(format string, args ...any) error {
	return &libError{codeInput, fmt.Sprintf(format, args...)}
}

// codeOf returns the C API code of err (codeRun unless it says otherwise).
func codeOf(err error) int {
	var le *libError
	if errors.As(err, &le) {
		return le.code
	}
	if errors.Is(err, cli.ErrUsage) {
		return codeInput
	}
	return codeRun
}

// message returns err's text as the command would print it (without the
// "usage: " marker of a bad flag).
func message(err error) string {
	return strings.TrimPrefix(err.Error(), cli.ErrUsage.Error()+": ")
}

// version is what `dainx version` prints after "dainx ".
func version() string { return dxversion.String() }

// buildTensor checks nnz cells of order indices (idx, row-major, 0-based)
// and values and returns them as a COO whose Dims are the largest index of
// each mode + 1, as the binary's readers make them. idx and val are copied.
// Errors name the cell (0-based row) and its indices.
func buildTensor(idx []int32, val []float64, order int) (*tensor.COO, error) {
	if order <= 0 {
		return nil, inputErr("order %d: want ≥ 1", order)
	}
	nnz := len(val)
	if nnz <= 0 {
		return nil, inputErr("nnz %d: want ≥ 1 cell", nnz)
	}
	if len(idx) != nnz*order {
		return nil, inputErr("%d indices for %d cells of order %d", len(idx), nnz, order)
	}
	dims := make([]int, order)
	for k := range nnz {
		cell := idx[k*order : (k+1)*order]
		for m, x := range cell {
			switch {
			case x < 0:
				return nil, inputErr("cell %d %s: index %d in mode %d is negative (indices are 0-based)", k, fmtCell(cell), x, m+1)
			case int64(x) >= tensor.MaxDim:
				return nil, inputErr("cell %d %s: index %d in mode %d is too large (a mode size must fit in int32: largest index %d)", k, fmtCell(cell), x, m+1, tensor.MaxDim-1)
			}
			dims[m] = max(dims[m], int(x)+1)
		}
		if v := val[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, inputErr("cell %d %s: value %v is not finite", k, fmtCell(cell), v)
		}
	}
	t := &tensor.COO{Dims: dims, Idx: append([]int32(nil), idx...), Val: append([]float64(nil), val...)}
	if err := t.Validate(); err != nil { // duplicates
		return nil, inputErr("%s", strings.TrimPrefix(err.Error(), "tensor: "))
	}
	return t, nil
}

func fmtCell(cell []int32) string {
	s := make([]string, len(cell))
	for i, x := range cell {
		s[i] = strconv.Itoa(int(x))
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// setOptions applies a JSON object of flag names (without the dash) and
// values to fs: numbers and strings are given to the flag as their text,
// booleans only to boolean flags. Unknown keys, and keys fs does not take
// (skip), are errors.
func setOptions(fs *flag.FlagSet, options string, skip map[string]string) error {
	if strings.TrimSpace(options) == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(options))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return inputErr("options: not a JSON object: %v", err)
	}
	if m == nil {
		return inputErr("options: not a JSON object: null")
	}
	if dec.More() {
		return inputErr("options: text after the JSON object")
	}
	for _, key := range sortedKeys(m) {
		v := m[key]
		if why, ok := skip[key]; ok {
			return inputErr("option %q: %s", key, why)
		}
		f := fs.Lookup(key)
		if f == nil {
			return inputErr("option %q: unknown (the options are the flags of `%s` without the dash: %s)", key, fs.Name(), strings.Join(flagNames(fs, skip), ", "))
		}
		_, isBool := f.Value.(interface{ IsBoolFlag() bool })
		var text string
		switch x := v.(type) {
		case json.Number:
			if isBool {
				return inputErr("option %q: want true or false, not %s", key, x)
			}
			text = x.String()
		case string:
			text = x
		case bool:
			if !isBool {
				return inputErr("option %q: want %s, not %v", key, kindOf(f), x)
			}
			text = strconv.FormatBool(x)
		default:
			return inputErr("option %q: want a JSON number, string or boolean, not %s", key, jsonKind(v))
		}
		if err := fs.Set(key, text); err != nil {
			return inputErr("option %q: invalid value %q: %v", key, text, err)
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ { // insertion sort: a handful of keys
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func flagNames(fs *flag.FlagSet, skip map[string]string) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := skip[f.Name]; !ok {
			out = append(out, f.Name)
		}
	})
	return out
}

func kindOf(f *flag.Flag) string {
	switch f.Value.(type) {
	case *cli.IntList:
		return "a string of comma-separated widths such as \"48,16\""
	}
	if _, err := strconv.ParseFloat(f.DefValue, 64); err == nil {
		return "a number"
	}
	return "a string"
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// augmentSkip are the augment flags the library refuses, and why.
var augmentSkip = map[string]string{
	"input": "the cells are passed in memory (idx, val); to augment a file, read it first (dainx_read)",
}

// augmentResult is what augment returns.
type augmentResult struct {
	aug    *tensor.COO
	report []byte // the JSON report, as `dainx augment` prints it
	// scores and importance, when the method computes them.
	scores     *dain.CellScores
	importance [][]float64
}

// augment is `dainx augment` on t with the options (a JSON object of flag
// names without the dash). Progress goes to stderr unless "quiet" is set.
// Every call opens and closes its own backend.
// With onEpoch, every finished epoch goes to it (dain.Config.OnEpoch), and
// not to stderr. ctx stops the run.
func augment(ctx context.Context, t *tensor.COO, options string, stderr io.Writer, onEpoch func(dain.EpochInfo)) (*augmentResult, error) {
	fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a := cli.NewAugment(fs)
	// As `dainx augment -checkpoint DIR [-resume]` (cmd/dainx/checkpoint.go).
	ckDir := fs.String("checkpoint", "", "save the run's state in this `directory` after every epoch of every training stage, so that resume can continue it")
	resume := fs.Bool("resume", false, "continue the run saved in the checkpoint directory from its last finished epoch")
	if err := setOptions(fs, options, augmentSkip); err != nil {
		return nil, err
	}
	if *resume && *ckDir == "" {
		return nil, inputErr("option \"resume\" needs \"checkpoint\", the directory of the run to continue")
	}
	if err := a.Finish(fs, stderr); err != nil {
		return nil, inputErr("%v", strings.TrimPrefix(err.Error(), "usage: "))
	}

	if err := cli.CheckLayers(&a.Config, t.Order()); err != nil {
		return nil, err
	}
	format, err := outputFormat(&a.In, a.Output)
	if err != nil {
		return nil, err
	}
	// The outputs are one transaction (internal/outtx), checked now.
	tx, err := a.Begin(*ckDir)
	if err != nil {
		return nil, inputErr("%v", err)
	}
	defer tx.Abort()
	// The library's result always carries the influence outputs a method
	// computes (dainx_result_scores, dainx_result_importance).
	a.Config.Keep.Scores, a.Config.Keep.Importance = dain.Computes(a.Config)
	be, err := cli.Open(&a.In, stderr)
	if err != nil {
		return nil, err
	}
	defer be.Close()
	if tx.Model != nil {
		cli.SaveModels(&a.Config.Keep, a, tx.Model, cli.Base(a.In.IndexBase, format), version())
	}
	a.Config.OnEpoch = onEpoch
	var res *dain.Result
	if *ckDir == "" {
		res, err = dain.Run(ctx, t, a.Config, be)
	} else {
		res, err = dain.RunCheckpointed(ctx, t, a.Config, be, dain.Checkpoint{Dir: *ckDir, Resume: *resume, Input: "the cells in memory", Program: version()})
	}
	if err != nil {
		if ctx.Err() != nil {
			msg := "dainx: cancelled"
			if *ckDir != "" {
				msg += fmt.Sprintf("; the checkpoint in %s keeps the last finished epoch: the same call with \"resume\": true continues the run", *ckDir)
			}
			return nil, &libError{codeCancelled, msg}
		}
		return nil, err
	}
	res.Report.Variant, res.Report.Version, res.Report.Preset = a.Variant(), version(), a.Preset
	js, err := tx.Finish(res, cli.Base(a.In.IndexBase, format), tensor.WriteOptions{Format: format, IndexBase: a.In.IndexBase})
	if err != nil {
		return nil, err
	}
	return &augmentResult{aug: res.Aug, report: js, scores: res.Scores, importance: res.Importance}, nil
}

// outputFormat is the format of "output": "format" if given, else by the
// file's extension.
func outputFormat(in *cli.Input, output string) (tensor.Format, error) {
	if in.Format != "" {
		f, err := tensor.ParseFormat(in.Format)
		if err != nil {
			return 0, inputErr("option \"format\": %v", strings.TrimPrefix(err.Error(), "tensor: "))
		}
		return f, nil
	}
	return tensor.FormatOf(output), nil
}

// fileOptions are the options of dainx_read and dainx_write.
type fileOptions struct {
	format    string
	indexBase int
}

// parseFileOptions parses {"format": "tsv"|"tns"|"bin", "index-base": B}.
func parseFileOptions(options string) (fileOptions, error) {
	o := fileOptions{indexBase: -1}
	fs := flag.NewFlagSet("dainx_read/dainx_write", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.format, "format", "", "tsv, tns or bin; empty: by the file's extension")
	fs.IntVar(&o.indexBase, "index-base", -1, "index base of the file; -1: the format's own")
	if err := setOptions(fs, options, nil); err != nil {
		return o, err
	}
	if o.indexBase < -1 {
		return o, inputErr("option \"index-base\" %d: want -1 (the format's own), 0, 1, …", o.indexBase)
	}
	return o, nil
}

func (o fileOptions) formatFor(path string) (tensor.Format, error) {
	if o.format == "" {
		return tensor.FormatOf(path), nil
	}
	f, err := tensor.ParseFormat(o.format)
	if err != nil {
		return 0, inputErr("option \"format\": %v", strings.TrimPrefix(err.Error(), "tensor: "))
	}
	return f, nil
}

// readTensor reads a tensor file as `dainx augment -input` does (and
// convert, for .bin), with the report {"dims": […], "format": "…"}.
func readTensor(path, options string) (*tensor.COO, []byte, error) {
	o, err := parseFileOptions(options)
	if err != nil {
		return nil, nil, err
	}
	f, err := o.formatFor(path)
	if err != nil {
		return nil, nil, err
	}
	t, err := tensor.ReadFile(path, tensor.ReadOptions{Format: f, IndexBase: o.indexBase})
	if err != nil {
		var pe *tensor.ParseError
		if errors.As(err, &pe) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, nil, inputErr("%v", err)
		}
		return nil, nil, err
	}
	js, err := json.Marshal(struct {
		Dims   []int  `json:"dims"`
		Format string `json:"format"`
	}{t.Dims, f.String()})
	return t, js, err
}

// writeTensor writes cells as `dainx augment -output` does. The mode sizes
// are the largest indices + 1.
func writeTensor(path string, idx []int32, val []float64, order int, options string) error {
	o, err := parseFileOptions(options)
	if err != nil {
		return err
	}
	f, err := o.formatFor(path)
	if err != nil {
		return err
	}
	t, err := buildTensor(idx, val, order)
	if err != nil {
		return err
	}
	tx, out, err := cli.BeginOutput(path)
	if err != nil {
		return inputErr("%v", err)
	}
	defer tx.Abort()
	return cli.CommitTensor(tx, out, t, tensor.WriteOptions{Format: f, IndexBase: o.indexBase})
}

// safely runs f, turning a panic into an error (codeRun) whose message
// is one line: "dainx: internal error: " and the panic's value (at most
// 200 bytes), never a stack trace. The host process must survive a bug
// here; with DAINX_TRACEBACK=1 in the environment the stack also goes to
// standard error.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg := strings.Join(strings.Fields(fmt.Sprint(r)), " ")
			if len(msg) > 200 {
				msg = strings.ToValidUTF8(msg[:200], "") + "…"
			}
			if os.Getenv("DAINX_TRACEBACK") == "1" {
				fmt.Fprintf(os.Stderr, "dainx: internal error: %v\n%s", r, debug.Stack())
			}
			err = &libError{codeRun, "dainx: internal error: " + msg + " (a bug in dainx; please report it, with the stack DAINX_TRACEBACK=1 prints)"}
		}
	}()
	return f()
}

// predictCells predicts n cells (idx, 0-based, row-major) with the model
// saved at path (model.Load's paths); options: "backend" (default cpu) and
// "batch" (cells per forward pass, 1…model.MaxCapacity, default 0: the
// model's saved batch capacity), as `dainx predict`'s flags. It returns
// the predictions and a JSON report, which also gives the model's "order"
// and "dims". n = 0 only loads and checks the model (order is then not
// compared with the model's when 0). The model's files are untrusted:
// any lie in them is an input error naming the file (model.Load).
func predictCells(path string, idx []int32, n, order int, options string) ([]float64, []byte, error) {
	fs := flag.NewFlagSet("dainx predict", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	backend := fs.String("backend", "cpu", "compute backend: cpu, cuda or auto")
	batch := fs.Int("batch", 0, "cells per forward pass (0: the model's saved capacity)")
	if err := setOptions(fs, options, nil); err != nil {
		return nil, nil, err
	}
	if *batch < 0 || *batch > model.MaxCapacity {
		return nil, nil, inputErr("option \"batch\": %d: want 1…%d cells, or 0 for the model's", *batch, model.MaxCapacity)
	}
	if jp, _ := model.Paths(path); isBayes(jp) {
		return predictBayes(path, idx, n, order)
	}
	be, err := cli.Open(&cli.Input{Backend: *backend, Precision: "fp32", Quiet: true}, io.Discard)
	if err != nil {
		return nil, nil, inputErr("%v", err)
	}
	defer be.Close()
	if jp, _ := model.Paths(path); modelKind(jp) == model.KindEnsemble {
		return predictEnsemble(path, be, *batch, idx, n, order)
	}
	net, meta, err := model.Load(path, be, *batch)
	if err != nil {
		return nil, nil, inputErr("%v", err)
	}
	defer net.Free()
	if err := checkCells(idx, n, order, meta); err != nil {
		return nil, nil, err
	}
	out := make([]float64, n)
	if n > 0 {
		set := net.NewSet(idx, make([]float64, n))
		defer set.Free()
		p, err := net.Predict(set)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range p {
			out[k] = float64(v)
		}
	}
	js, err := json.Marshal(map[string]any{"model": path, "n_cells": n, "kind": meta.Kind, "role": meta.Role, "trained_by": meta.Version, "version": version(), "backend": be.Name(),
		"order": meta.Order, "dims": meta.Dims})
	return out, js, err
}

// isBayes reports whether the metadata file jp is a bayes-fm model's (a
// file that cannot be read is left to the loader to report).
func isBayes(jp string) bool { return modelKind(jp) == model.KindBayesFM }

// modelKind returns the kind the metadata file jp names, "" when it cannot
// be read (left to the loader to report).
func modelKind(jp string) string {
	meta, err := model.ReadMeta(jp)
	if err != nil {
		return ""
	}
	return meta.Kind
}

// predictEnsemble is predictCells for a stacked ensemble
// (model.LoadEnsemble): its member nets on be, a bayes-fm member on the
// CPU in float64, the stack in float64.
func predictEnsemble(path string, be compute.Backend, batch int, idx []int32, n, order int) ([]float64, []byte, error) {
	ens, meta, err := model.LoadEnsemble(path, be, batch)
	if err != nil {
		return nil, nil, inputErr("%v", err)
	}
	defer ens.Free()
	if err := checkCells(idx, n, order, meta); err != nil {
		return nil, nil, err
	}
	out := []float64{}
	if n > 0 {
		if out, err = ens.Predict(&tensor.COO{Dims: meta.Dims, Idx: idx[:n*order], Val: make([]float64, n)}); err != nil {
			return nil, nil, err
		}
	}
	js, err := json.Marshal(map[string]any{"model": path, "n_cells": n, "kind": meta.Kind, "role": meta.Role, "trained_by": meta.Version, "version": version(),
		"backend": be.Name() + " (the member nets; the stack in float64)", "order": meta.Order, "dims": meta.Dims, "members": meta.Members})
	return out, js, err
}

// predictBayes is predictCells for a bayes-fm model (model.LoadBayes): the
// mean over its posterior samples of each sample's prediction, clamped by
// its clamp_rule, in float64 on the CPU whatever the backend option says.
func predictBayes(path string, idx []int32, n, order int) ([]float64, []byte, error) {
	m, meta, err := model.LoadBayes(path)
	if err != nil {
		return nil, nil, inputErr("%v", err)
	}
	if err := checkCells(idx, n, order, meta); err != nil {
		return nil, nil, err
	}
	out := []float64{}
	if n > 0 {
		if out, err = m.Predict(&tensor.COO{Dims: meta.Dims, Idx: idx[:n*order], Val: make([]float64, n)}); err != nil {
			return nil, nil, err
		}
	}
	js, err := json.Marshal(map[string]any{"model": path, "n_cells": n, "kind": meta.Kind, "role": meta.Role, "trained_by": meta.Version, "version": version(),
		"backend": "cpu (float64, the mean over the model's posterior samples)", "order": meta.Order, "dims": meta.Dims, "samples": meta.Samples})
	return out, js, err
}

// checkCells reports, as an input error, n cells idx (0-based, row-major)
// of another order than the model of meta (n = 0 and order 0 only load
// the model) or with an index outside its modes.
func checkCells(idx []int32, n, order int, meta model.Meta) error {
	if order != meta.Order && (n > 0 || order != 0) {
		return inputErr("cells of order %d, the model's order is %d", order, meta.Order)
	}
	for k := 0; k < n; k++ {
		for m, i := range idx[k*order : (k+1)*order] {
			if i < 0 || int(i) >= meta.Dims[m] {
				return inputErr("cell %d (row %d): index %d of mode %d is outside the model's 0…%d", k, k, i, m, meta.Dims[m]-1)
			}
		}
	}
	return nil
}
