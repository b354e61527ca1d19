package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dainx/dainx/bayes"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/foldin"
	"github.com/dainx/dainx/internal/outtx"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
	"github.com/dainx/dainx/tensor"
)

// FoldIn holds the flags of `dainx fold-in` that the C library's
// dainx_fold_in takes as options too (the binary adds -input, -format,
// -index-base and the table flags; the library gets the cells in memory
// and the model as an argument).
type FoldIn struct {
	Config   foldin.Config
	Model    string // -model: the model read
	ModelOut string // -model-out: the directory of the model written
	Report   string // -report
	// Backend, Device, Precision and Quiet as every command's.
	Backend, Precision string
	Device             int
	Quiet              bool
	// GemmTune is -gemm-tune, as every command's (BindGemmTune), and
	// GemmSerial -gemm-serial (BindGemmSerial).
	GemmTune, GemmSerial string
	// Sweeps is -sweeps: a bayes-fm model's Gibbs sweeps per posterior
	// sample (0: bayes.DefaultFoldInSweeps).
	Sweeps int
}

// NewFoldIn returns the defaults of `dainx fold-in` (foldin.DefaultConfig)
// and registers its shared flags on fs, bound to the returned value;
// model says whether -model is registered (the library takes the model
// as an argument).
func NewFoldIn(fs *flag.FlagSet, model bool) *FoldIn {
	f := &FoldIn{Config: foldin.DefaultConfig()}
	c := &f.Config
	if model {
		fs.StringVar(&f.Model, "model", "", "the saved model to fold new entities into: a -model-out `directory` (its model.json, Θ′), or a NAME.json / NAME.safetensors of one (required)")
	}
	fs.StringVar(&f.ModelOut, "model-out", "", "write the model with the new entities into this `directory` (model.json and model.safetensors, and the grown dictionaries.json of a model trained on a table), for dainx predict; not the model read (required)")
	fs.StringVar(&f.Report, "report", "", "also write the JSON report to this `file` (it always goes to standard output)")
	fs.StringVar(&c.Tune, "tune", c.Tune, "which embedding rows train: `new` (the new entities' only: every known row and every layer stays as it is, bit for bit) or all (also the known entities' rows that the cells touch; the layers stay frozen)")
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "maximum training `epochs`")
	fs.IntVar(&c.Batch, "batch", c.Batch, "training batch `size` in cells")
	fs.Float64Var(&c.LR, "lr", c.LR, "Adam learning `rate` of the trained rows (higher than augment's 0.001: the new rows start at random, with a few thousand cells to learn from)")
	fs.IntVar(&c.Patience, "patience", c.Patience, "early-stopping patience in `epochs` without a better validation MSE (the best epoch's rows are kept)")
	fs.Float64Var(&c.L2, "l2", c.L2, "L2 penalty `λ` of the trained rows (each step uses g + λ·θ for the rows it updates); 0 is none")
	fs.Float64Var(&c.ValFrac, "val-frac", c.ValFrac, "`share` of the cells held out for validation and early stopping, 0 ≤ share < 1 (a cell is trained on instead when its new entity would keep no training cell); 0: no validation, every epoch runs")
	fs.IntVar(&f.Sweeps, "sweeps", bayes.DefaultFoldInSweeps, "with a bayes-fm model (-preset accurate's): Gibbs `sweeps` over the new entities in each posterior sample, the last draw kept (the net-only flags -epochs, -batch, -lr, -patience, -l2 and -val-frac do not apply)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random `seed` for the new rows' initialisation, the validation share and the order of the cells")
	BindBackend(fs, &f.Backend, &f.Device, &f.Precision, &f.GemmTune, &f.GemmSerial, &f.Quiet)
	return f
}

// Check reports a missing or bad flag (wrapping ErrUsage).
func (f *FoldIn) Check() error {
	if f.Model == "" || f.ModelOut == "" {
		return fmt.Errorf("%w: -model and -model-out are required (the model read and the directory of the model written)", ErrUsage)
	}
	if err := f.Config.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if f.Sweeps < 1 || f.Sweeps > foldin.MaxEpochs {
		return fmt.Errorf("%w: -sweeps %d: want 1…%d", ErrUsage, f.Sweeps, foldin.MaxEpochs)
	}
	return nil
}

// FoldInTx is the output transaction of a fold-in: the model directory and
// the report.
type FoldInTx struct {
	Tx     *outtx.Tx
	Model  *outtx.Dir
	Report *outtx.File
}

// Abort removes whatever was staged and not committed.
func (t *FoldInTx) Abort() { t.Tx.Abort() }

// Begin checks the outputs before any work (internal/outtx): -model-out
// may not be the model read (its directory, or the directory holding the
// NAME.json given), nor hold an input; the report may not be an input
// either. inputs are the other files read (the cells).
func (f *FoldIn) Begin(inputs ...string) (*FoldInTx, error) {
	t := &FoldInTx{Tx: outtx.New()}
	for _, in := range inputs {
		t.Tx.Input(in)
	}
	if st, err := os.Stat(f.Model); err == nil && st.IsDir() {
		t.Tx.InputDir(f.Model)
	} else {
		jp, sp := model.Paths(f.Model)
		t.Tx.Input(f.Model)
		t.Tx.Input(jp)
		t.Tx.Input(sp)
		t.Tx.Input(filepath.Join(filepath.Dir(jp), dictFile))
	}
	if same(f.Model, f.ModelOut) {
		return nil, fmt.Errorf("%w: -model-out %s is the model read (-model %s): fold-in writes a new model beside it; give another directory", ErrUsage, f.ModelOut, f.Model)
	}
	var err error
	if t.Model, err = t.Tx.Dir(f.ModelOut, ModelFile); err != nil {
		return nil, err
	}
	if t.Report, err = t.Tx.Report(f.Report); err != nil {
		return nil, err
	}
	return t, nil
}

// dictFile is the dictionaries' file in a model directory
// (table.DictFile).
const dictFile = "dictionaries.json"

// same reports whether the model path m (a directory or a file of one)
// and the output directory out are one directory.
func same(m, out string) bool {
	dir := m
	if st, err := os.Stat(m); err != nil || !st.IsDir() {
		dir = filepath.Dir(m)
	}
	a, errA := os.Stat(dir)
	b, errB := os.Stat(out)
	if errA == nil && errB == nil {
		return os.SameFile(a, b)
	}
	return filepath.Clean(dir) == filepath.Clean(out)
}

// FoldInReport is the JSON report of a fold-in: foldin.Report's fields
// and the files, versions and backend.
type FoldInReport struct {
	Model    string `json:"model"`
	Input    string `json:"input"`
	ModelOut string `json:"model_out"`
	Role     string `json:"role"`
	*foldin.Report
	Version string   `json:"version"`
	Trained string   `json:"trained_by"` // the dainx version that saved the model read
	Backend string   `json:"backend"`
	Outputs []string `json:"outputs"`
}

// Extra is what a caller of Run writes beside the model (nil: nothing):
// the grown dictionaries of a model trained on a table.
type Extra func(dir string) error

// Load loads the model f.Model onto be (model.Load, the saved capacity).
func (f *FoldIn) Load(be compute.Backend) (*nn.Net, model.Meta, error) {
	return model.Load(f.Model, be, 0)
}

// Run folds cells (indices of the model's modes, Validate'd: no
// duplicates) into net, the model f.Model with its metadata meta (Load),
// and writes the grown model, then extra's files, into t's model
// directory and the report, committing them together. input names the
// cells in the report and the model's metadata. Progress goes to stderr
// unless f.Quiet; with onEpoch every epoch's line goes to it instead. It
// returns the report's JSON (with a final newline). Cells of another
// order, a *foldin.LimitError and cells without a new entity (with -tune
// new) are errors (the caller may check them first, to name the file and
// line).
func (f *FoldIn) Run(ctx context.Context, t *FoldInTx, net *nn.Net, meta model.Meta, cells *tensor.COO, input, version string, extra Extra, stderr io.Writer, onEpoch func(nn.Epoch, string)) ([]byte, error) {
	be := net.Backend()
	cfg := f.Config
	if !f.Quiet {
		cfg.Progress = stderr
	}
	cfg.OnEpoch = onEpoch
	// M2 is built for the larger of M's batch capacity and the batch
	// (at most the cells), and must load again (model.CheckCapacity).
	cfg.Capacity = max(net.Capacity(), min(cfg.Batch, cells.NNZ()))
	if err := model.CheckCapacity(meta, cfg.Capacity, "-batch"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	g, rep, err := foldin.Run(ctx, net, cells, cfg)
	if err != nil {
		return nil, err
	}
	defer g.Free()
	record := map[string]any{"tune": cfg.Tune, "epochs": cfg.Epochs, "batch": cfg.Batch,
		"lr": cfg.LR, "patience": cfg.Patience, "l2": cfg.L2, "val-frac": cfg.ValFrac, "seed": cfg.Seed}
	save := func(dir string, out model.Meta) error { return model.Save(dir, model.DefaultName, g, out) }
	return f.commit(t, meta, rep, record, save, extra, input, version, be.Name())
}

// commit writes the grown model (save, into t's staging directory, with
// meta's metadata and this fold-in appended to its training record:
// record's settings, the input, the model read and the new entities),
// then extra's files, and commits them with the report (rep, backend).
func (f *FoldIn) commit(t *FoldInTx, meta model.Meta, rep *foldin.Report, record map[string]any, save func(dir string, out model.Meta) error, extra Extra, input, version, backend string) ([]byte, error) {
	dir, err := t.Model.Path()
	if err != nil {
		return nil, err
	}
	training := map[string]any{}
	for k, v := range meta.Training {
		training[k] = v
	}
	record["input"], record["model"], record["dims_before"], record["new_entities"], record["dainx_version"] = input, f.Model, rep.DimsBefore, rep.NewEntities, version
	var folds []any
	if prev, ok := training["fold-in"].([]any); ok {
		folds = prev
	}
	training["fold-in"] = append(folds, record)
	out := model.Meta{Version: version, Role: meta.Role, IndexBase: meta.IndexBase, Training: training}
	// The user knows the directory by its name, not the staging one's.
	if err := save(dir, out); err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), dir, t.Model.UserPath()))
	}
	if extra != nil {
		if err := extra(dir); err != nil {
			return nil, errors.New(strings.ReplaceAll(err.Error(), dir, t.Model.UserPath()))
		}
	}
	full := FoldInReport{Model: f.Model, Input: input, ModelOut: f.ModelOut, Role: meta.Role, Report: rep,
		Version: version, Trained: meta.Version, Backend: backend, Outputs: t.Tx.Paths()}
	return commitReport(t.Tx, t.Report, full)
}
