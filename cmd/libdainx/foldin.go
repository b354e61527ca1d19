package main

// dainx_fold_in's logic in plain Go (export_foldin.go converts).

import (
	"context"
	"errors"
	"flag"
	"io"
	"time"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/foldin"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// foldInSkip are the fold-in flags the library refuses, and why.
var foldInSkip = map[string]string{
	"model": "the model is the first argument of dainx_fold_in",
	"input": "the cells are passed in memory (idx, val)",
}

// foldIn is `dainx fold-in -model path` on the cells t (Validate'd) with
// the options (a JSON object of the command's flag names without the
// dash; "model-out" is required). It returns the report's JSON. Progress
// goes to stderr unless "quiet" is set; with onEpoch every epoch's line
// goes to it instead. A model that does not load, cells that do not fit
// it (another order, more new entities than cells, no new entity with
// "tune": "new") and bad options are input errors.
func foldIn(ctx context.Context, path string, t *tensor.COO, options string, stderr io.Writer, onEpoch func(e nn.Epoch, epochs int, line string)) ([]byte, error) {
	fs := flag.NewFlagSet("dainx fold-in", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := cli.NewFoldIn(fs, false)
	if err := setOptions(fs, options, foldInSkip); err != nil {
		return nil, err
	}
	f.Model = path
	if f.ModelOut == "" {
		return nil, inputErr("option \"model-out\" is required: the directory of the model written")
	}
	if err := f.Check(); err != nil {
		return nil, inputErr("%v", message(err))
	}
	jp, _ := model.Paths(path)
	meta, err := model.ReadMeta(jp)
	if err != nil {
		return nil, inputErr("%v", err)
	}
	if meta.Kind == model.KindEnsemble {
		return nil, inputErr("%v", cli.ErrFoldEnsemble(path))
	}
	if t.Order() != meta.Order {
		return nil, inputErr("cells of order %d, the model's order is %d", t.Order(), meta.Order)
	}
	if _, err := foldin.GrownDims(meta.Dims, t); err != nil {
		var le *foldin.LimitError
		if errors.As(err, &le) {
			return nil, inputErr("cell %d: %v", le.Cell, err)
		}
		return nil, inputErr("%v", err)
	}
	tx, err := f.Begin()
	if err != nil {
		return nil, inputErr("%v", message(err))
	}
	defer tx.Abort()
	if meta.Kind == model.KindBayesFM {
		js, err := f.RunBayes(ctx, tx, meta, t, "the cells in memory", version(), nil, stderr)
		switch {
		case err == nil:
			return js, nil
		case ctx.Err() != nil:
			return nil, &libError{codeCancelled, "dainx: cancelled"}
		case errors.Is(err, foldin.ErrNoNewEntity), errors.Is(err, cli.ErrUsage):
			return nil, inputErr("%v", message(err))
		}
		return nil, inputErr("%v", err)
	}
	be, err := cli.Open(&cli.Input{Backend: f.Backend, Device: f.Device, Precision: f.Precision, GemmTune: f.GemmTune, GemmSerial: f.GemmSerial, Quiet: f.Quiet}, stderr)
	if err != nil {
		return nil, inputErr("%v", message(err))
	}
	defer be.Close()
	net, meta, err := f.Load(be)
	if err != nil {
		return nil, inputErr("%v", err)
	}
	defer net.Free()
	var each func(nn.Epoch, string)
	if onEpoch != nil {
		each = func(e nn.Epoch, line string) { onEpoch(e, f.Config.Epochs, line) }
	}
	js, err := f.Run(ctx, tx, net, meta, t, "the cells in memory", version(), nil, stderr, each)
	switch {
	case err == nil:
		return js, nil
	case ctx.Err() != nil:
		return nil, &libError{codeCancelled, "dainx: cancelled"}
	case errors.Is(err, foldin.ErrNoNewEntity):
		return nil, inputErr("%v", err)
	}
	return nil, err
}

// foldInEvents is foldIn with its progress as events to call (see
// runEvents): the lines as "log", each epoch as an "epoch" of stage
// "fold-in", model "Θ+".
func foldInEvents(model string, t *tensor.COO, options string, call func([]byte) bool) ([]byte, error) {
	var report []byte
	err := runEvents(func(ctx context.Context, log io.Writer, send func(event)) error {
		start := time.Now()
		var err error
		report, err = foldIn(ctx, model, t, options, log, func(e nn.Epoch, epochs int, line string) {
			best := e.Best
			send(event{Event: "epoch", Stage: "fold-in", Model: "Θ+", Epoch: e.N, Epochs: epochs, TrainMSE: finite(e.TrainMSE), ValMSE: finite(e.ValMSE),
				Best: &best, Seconds: finite(e.Seconds), Elapsed: time.Since(start).Seconds(), Message: line})
		})
		return err
	}, call)
	return report, err
}
