package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dainx/dainx/internal/cli"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/tensor"
)

// predictReport is the JSON report of dainx predict.
type predictReport struct {
	Model   string   `json:"model"`
	Cells   string   `json:"cells"`
	N       int      `json:"n_cells"`
	RMSE    *float64 `json:"rmse,omitempty"` // of the predictions against the file's values
	Kind    string   `json:"kind"`
	Role    string   `json:"role"`
	Version string   `json:"version"`
	Trained string   `json:"trained_by"` // the dainx version that saved the model
	Backend string   `json:"backend"`
	Seconds float64  `json:"seconds"`
}

func predict(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dainx predict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("model", "", "saved model: a -model-out `directory` (its model.json, Θ′), or a NAME.json / NAME.safetensors of one")
	cells := fs.String("cells", "", "the cells to predict: a tensor `file` as dainx augment reads (tsv, tns, bin, gzip); its values give the RMSE")
	output := fs.String("output", "", "write the cells and their predicted values to this `file` (tab-separated, the cells' index base; gzip if it ends in .gz), written atomically; default standard output")
	report := fs.String("report", "", "write the JSON report (number of cells, RMSE against the file's values, versions) to this `file`; it always goes to standard error")
	format := fs.String("format", "", "`format` of -cells: tsv, tns or bin; empty: by extension")
	base := fs.Int("index-base", -1, "index `base` of -cells and -output; -1: the model's (the base of the tensor it was trained on)")
	backend := fs.String("backend", "cpu", "compute `backend`: cpu, cuda or auto")
	evalBatch := fs.Int("batch", 4096, "cells per forward pass (dainx augment's evaluation batch)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx predict -model DIR -cells FILE [flags]

Predicts the value of each cell of FILE with a model saved by dainx augment
-model-out (on the CPU, bit for bit the values the model gave during the
run). Out-of-range indices are errors naming the cell.

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if *path == "" || *cells == "" {
		return exitFor("predict", fmt.Errorf("%w: -model and -cells are required", errUsage), nil, stderr)
	}
	return exitFor("predict", runPredict(*path, *cells, *output, *report, *format, *base, *backend, *evalBatch, stdout, stderr), nil, stderr)
}

func runPredict(path, cells, output, report, format string, base int, backend string, evalBatch int, stdout, stderr io.Writer) error {
	t0 := time.Now()
	if evalBatch <= 0 {
		return fmt.Errorf("%w: -batch %d: want ≥ 1", errUsage, evalBatch)
	}
	if err := checkWritable(output, report); err != nil {
		return err
	}
	be, err := cli.Open(&cli.Input{Backend: backend, Precision: "fp32", Quiet: true}, stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	net, meta, err := model.Load(path, be, evalBatch)
	if err != nil {
		return err
	}
	defer net.Free()
	if base < 0 {
		base = meta.IndexBase
	}
	in := &inputFlags{Input: cells, Format: format, IndexBase: base}
	t, _, _, err := readInput(in)
	if err != nil {
		return err
	}
	order := t.Order()
	if order != meta.Order {
		return fmt.Errorf("%s: cells of order %d, the model's order is %d", cells, order, meta.Order)
	}
	for k := 0; k < t.NNZ(); k++ {
		for n, i := range t.Idx[k*order : (k+1)*order] {
			if int(i) >= meta.Dims[n] {
				return fmt.Errorf("%s: cell %d (%s): index %d of mode %d is outside the model's %d…%d", cells, k+1, cellString(t.Idx[k*order:(k+1)*order], base), int(i)+base, n+1, base, meta.Dims[n]-1+base)
			}
		}
	}
	set := net.NewSet(t.Idx, t.Val)
	defer set.Free()
	pred, err := net.Predict(set)
	if err != nil {
		return err
	}
	rep := predictReport{Model: path, Cells: cells, N: t.NNZ(), Kind: meta.Kind, Role: meta.Role, Version: version(), Trained: meta.Version, Backend: be.Name()}
	if t.NNZ() > 0 {
		mse, err := net.Evaluate(set)
		if err != nil {
			return err
		}
		r := math.Sqrt(mse)
		rep.RMSE = &r
	}
	write := func(w io.Writer) error {
		b := bufio.NewWriterSize(w, 1<<16)
		var buf []byte
		for k, p := range pred {
			buf = buf[:0]
			for _, i := range t.Idx[k*order : (k+1)*order] {
				buf = strconv.AppendInt(buf, int64(i)+int64(base), 10)
				buf = append(buf, '\t')
			}
			buf = strconv.AppendFloat(buf, float64(p), 'g', -1, 32)
			buf = append(buf, '\n')
			if _, err := b.Write(buf); err != nil {
				return err
			}
		}
		return b.Flush()
	}
	if output != "" {
		if err := tensor.AtomicWrite(output, func(w io.Writer) error { return gzipIf(output, w, write) }); err != nil {
			return err
		}
	} else if err := write(stdout); err != nil {
		return err
	}
	rep.Seconds = time.Since(t0).Seconds()
	js, _ := json.MarshalIndent(rep, "", "  ")
	js = append(js, '\n')
	if report != "" {
		if err := tensor.AtomicWrite(report, func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
			return err
		}
	}
	_, err = stderr.Write(js)
	return err
}

// cellString formats a cell's indices plus base.
func cellString(c []int32, base int) string {
	s := ""
	for n, i := range c {
		if n > 0 {
			s += " "
		}
		s += strconv.Itoa(int(i) + base)
	}
	return s
}

// gzipIf runs write on w, through gzip when path ends in .gz.
func gzipIf(path string, w io.Writer, write func(io.Writer) error) error {
	if !strings.HasSuffix(strings.ToLower(path), ".gz") {
		return write(w)
	}
	z := gzip.NewWriter(w)
	if err := write(z); err != nil {
		return err
	}
	return z.Close()
}
