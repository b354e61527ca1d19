// Package cli holds the flags of `dainx augment` (and the input, training
// and method flags that `dainx eval` shares) and the backend choice they
// make, so that the dainx command and the embedding library (cmd/libdainx,
// whose options are these flags without the dash) parse them through the
// same flag.FlagSet definitions and open the same backend.
//
// Nothing here installs signal handlers or writes to the process's standard
// streams by itself: callers pass the writers.
package cli

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/internal/memlimit"
	"github.com/dainx/dainx/model"
	"github.com/dainx/dainx/nn"
)

// ErrUsage marks an error in the command line (or the library's options):
// exit code 2 for the command, "bad option" for the library.
var ErrUsage = errors.New("usage")

// IntList is a flag.Value for comma-separated positive integers.
type IntList []int

func (l *IntList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// Set parses comma-separated positive integers.
func (l *IntList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	*l = out
	return nil
}

// Input holds the flags every command that reads a tensor shares.
type Input struct {
	Input, Format, Backend string
	Precision              string
	Device                 int
	IndexBase              int
	Quiet                  bool
	Layers                 IntList
	// Table holds -index, -value and -ids (BindTable): -input is then a
	// table of IDs.
	Table Table
	// GemmTune is -gemm-tune (off, model or time); "" (an Input made
	// without the flags) means $DAINX_GEMM_TUNE, else off.
	GemmTune string
	// GemmSerial is -gemm-serial (on or off); "" (an Input made without
	// the flags) means on when $DAINX_GEMM_SERIAL=1, else off.
	GemmSerial string
}

// BindInput registers the input, backend and progress flags.
func BindInput(fs *flag.FlagSet, f *Input) {
	fs.StringVar(&f.Input, "input", "", "input tensor `file`: DAIN TSV (0-based indices, tab-separated, then the value), FROSTT .tns (1-based, # comments) or SPLATT .bin; with -index, a table (CSV, TSV or Parquet) of IDs; gzip is detected by content. Empty: the embedded demo tensor (DAIN's synthetic_10K)")
	fs.StringVar(&f.Format, "format", "", "input `format`: tsv, tns or bin (SPLATT binary), or with -index csv, tsv or parquet; empty: by extension after any .gz (.tns is tns, .bin is bin, anything else tsv; with -index .csv, .tsv, .parquet)")
	fs.IntVar(&f.IndexBase, "index-base", -1, "index `base` of the input and output files (0 or 1); -1: the format's own (tsv 0, tns 1)")
	BindBackend(fs, &f.Backend, &f.Device, &f.Precision, &f.GemmTune, &f.GemmSerial, &f.Quiet)
}

// BindBackend registers the flags that open the backend (-backend,
// -device, -precision, -gemm-tune, -gemm-serial) and -quiet, for every
// command that trains or predicts.
func BindBackend(fs *flag.FlagSet, backend *string, device *int, precision, gemmTune, gemmSerial *string, quiet *bool) {
	fs.StringVar(backend, "backend", "auto", "compute `backend`: auto (CUDA if a driver and device exist, else CPU), cpu or cuda")
	dev, err := DeviceFromEnv()
	if err != nil {
		dev = -1 // reported by OpenBackend as a bad -device
	}
	fs.IntVar(device, "device", dev, "CUDA device `ordinal` (default $DAINX_DEVICE, else 0); dainx shares the device's primary context")
	fs.StringVar(precision, "precision", "fp32", "GEMM `precision` of the CUDA backend: fp32 (exact float32), tf32 (tensor cores, 10-bit mantissa products) or 3xtf32 (tensor cores, split operands, about fp32 accuracy)")
	BindGemmTune(fs, gemmTune)
	BindGemmSerial(fs, gemmSerial)
	fs.BoolVar(quiet, "quiet", false, "no progress on standard error")
}

// BindGemmTune registers -gemm-tune, whose default is $DAINX_GEMM_TUNE,
// else off (a bad value of the variable is refused when the backend is
// opened, unless the flag is given).
func BindGemmTune(fs *flag.FlagSet, v *string) {
	*v = cmp.Or(os.Getenv(EnvGemmTune), "off")
	fs.StringVar(v, "gemm-tune", *v, "how the CUDA backend chooses each GEMM shape's kernel: `off` (the 64×64 kernels), model (the analytic model's first choice) or time (the model's best few timed on the GPU at first use, the winner cached in the user's cache directory; dainx tune fills the cache); the same results, only the speed differs (docs/gpu-tuning.md); $DAINX_GEMM_TUNE sets the default")
}

// BindGemmSerial registers -gemm-serial, whose default is on when
// $DAINX_GEMM_SERIAL=1, else off.
func BindGemmSerial(fs *flag.FlagSet, v *string) {
	*v = "off"
	if GemmSerialFromEnv() {
		*v = "on"
	}
	fs.StringVar(v, "gemm-serial", *v, "with -gemm-tune model or time, run each GEMM that the CUDA backend splits over its inner dimension (on a tuned kernel) as serial split-K, one kernel whose blocks add their parts in turn, instead of the parts and a reduction: `on` or off (off, the faster on an H200, unless $DAINX_GEMM_SERIAL=1); the same results, only the speed differs (docs/gpu-tuning.md)")
}

// ParseGemmSerial parses a -gemm-serial value: on or off; "" is
// $DAINX_GEMM_SERIAL's default (on when it is 1).
func ParseGemmSerial(s string) (bool, error) {
	switch s {
	case "":
		return GemmSerialFromEnv(), nil
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%w: -gemm-serial %q: want on or off", ErrUsage, s)
}

// GraphsDefault is the default of -graphs: off when $DAINX_CUDA_GRAPHS is
// 0, else on.
func GraphsDefault() dain.Graphs {
	if os.Getenv(EnvCUDAGraphs) == "0" {
		return dain.GraphsOff
	}
	return dain.GraphsOn
}

// DefaultConfig is dain.DefaultConfig with the defaults the environment
// sets (GraphsDefault): the configuration every command that trains
// starts from, read once, before its flags are registered.
func DefaultConfig() dain.Config {
	c := dain.DefaultConfig()
	c.Graphs = GraphsDefault()
	return c
}

// BindTraining registers the flags of the models' training and the split.
func BindTraining(fs *flag.FlagSet, c *dain.Config, layers *IntList) {
	fs.Var(layers, "layers", "MLP layer `widths`: N·E (N modes × embedding width E) then the hidden widths, comma-separated; default N·50,1024,1024,128")
	BindSettings(fs, c, "training")
	BindMemory(fs, &c.MaxMemory)
}

// MaxMemoryHelp is the usage of -max-memory, the same in every command.
const MaxMemoryHelp = "the most memory the command may use, e.g. 8GiB, 500MB or 2G: a configuration whose estimated bytes exceed it is refused before anything is built, with one line naming the flags that size its largest part; `auto` (the default) is what the system says is still available (MemAvailable, the cgroup's limit, ulimit -v)"

// BindMemory registers -max-memory, bound to max (bytes; 0 is auto).
func BindMemory(fs *flag.FlagSet, max *int64) {
	fs.Var((*memlimit.Bytes)(max), "max-memory", MaxMemoryHelp)
}

// BindSettings registers the flag of every setting of dain.Settings
// whose Bind is group, bound to its field of c, with c's value as its
// default and the setting's Help.
func BindSettings(fs *flag.FlagSet, c *dain.Config, group string) {
	for _, s := range dain.Settings() {
		if s.Bind != group {
			continue
		}
		p := s.Of(c).Addr().Interface()
		if _, ok := p.(flag.Value); !ok && s.Type().Kind() == reflect.String {
			// A string type of dain's (dain.SplitKind, …) takes a string
			// flag, as a plain string does.
			p = s.Of(c).Addr().Convert(reflect.TypeFor[*string]()).Interface()
		}
		switch p := p.(type) {
		case flag.Value:
			fs.Var(p, s.Flag, s.Help)
		case *string:
			fs.StringVar(p, s.Flag, *p, s.Help)
		case *int:
			fs.IntVar(p, s.Flag, *p, s.Help)
		case *uint64:
			fs.Uint64Var(p, s.Flag, *p, s.Help)
		case *float64:
			fs.Float64Var(p, s.Flag, *p, s.Help)
		case *bool:
			fs.BoolVar(p, s.Flag, *p, s.Help)
		default:
			panic(fmt.Sprintf("cli: setting %s: no flag for a %T", s.Field, p))
		}
	}
}

// BindMethod registers the flags that choose how cells are made; their
// help lists dain's variants of each step.
//
// -method goes to *method, not c.Method: ApplyMethod turns the name into
// c's settings once the command line is parsed.
func BindMethod(fs *flag.FlagSet, c *dain.Config, method *string) {
	fs.StringVar(method, "method", *method, methodHelp())
	BindSettings(fs, c, "method")
	BindInRun(fs, c)
}

// BindInRun registers the settings of -influence in-run (augment's
// -influence, eval's methods dain-in-run and dain-in-run-signed).
func BindInRun(fs *flag.FlagSet, c *dain.Config) {
	BindSettings(fs, c, "in-run")
}

// Augment holds every flag of `dainx augment`.
type Augment struct {
	Config dain.Config
	In     Input
	Output string // -output: the augmented cells
	Report string // -report: the JSON report
	Method string // -method, a name of MethodNames
	Preset string // -preset, a name of Presets
	Oracle string // -oracle: the input's generator file, for -values oracle
	Out    Outputs
}

// NewAugment returns the defaults of `dainx augment` and registers its
// flags on fs, bound to the returned value.
func NewAugment(fs *flag.FlagSet) *Augment {
	a := &Augment{Config: DefaultConfig()}
	BindInput(fs, &a.In)
	fs.StringVar(&a.Output, "output", "", "write the augmented cells only to this `file`, in the format its extension names (.tsv, .tns, .bin, before any .gz) or else the input's, in the input's index base unless -index-base says otherwise (gzip if it ends in .gz); written to a temporary file and renamed, never half-written")
	fs.StringVar(&a.Report, "report", "", "also write the JSON report to this `file` (it always goes to standard output)")
	fs.Float64Var(&a.Config.Ratio, "ratio", a.Config.Ratio, "augmentation `ratio`: draw ratio × |train| new cells")
	BindTraining(fs, &a.Config, &a.In.Layers)
	a.Method = string(a.Config.Method)
	BindMethod(fs, &a.Config, &a.Method)
	BindValues(fs, &a.Config, &a.Oracle)
	BindOutputs(fs, &a.Out)
	BindPreset(fs, &a.Preset)
	return a
}

// Finish turns the parsed flags of fs (NewAugment's) into a's
// configuration: the preset's and the method's settings (ApplyPreset,
// ApplyMethod), FinishConfig, the
// outputs' checks and what the run must keep for them. Errors in the
// command line wrap ErrUsage.
func (a *Augment) Finish(fs *flag.FlagSet, stderr io.Writer) error {
	if err := ApplyPreset(fs, &a.Config, a.Preset); err != nil {
		return err
	}
	if err := ApplyMethod(fs, &a.Config, a.Method); err != nil {
		return err
	}
	if err := LoadOracle(&a.Config, a.Oracle); err != nil {
		return err
	}
	if err := FinishConfig(&a.Config, &a.In, stderr); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if a.Config.Ratio == 0 {
		return fmt.Errorf("%w: -ratio must be > 0; 0 draws no cells", ErrUsage)
	}
	if err := a.Out.Check(); err != nil {
		return err
	}
	a.Config.Keep = a.Out.Keep()
	return nil
}

// Variant is the -method name for the report's "variant" field: the name
// given when it is one of dain.Variants other than a generic cell maker's
// own name, else "".
func (a *Augment) Variant() string {
	if _, ok := dain.VariantNamed(a.Method); ok && a.Method != string(a.Config.Method) {
		return a.Method
	}
	return ""
}

// FinishConfig applies the parsed layers to c, sends progress to stderr
// unless f.Quiet, and checks the configuration. The numeric flags are
// capped so that no count derived from them overflows: -batch and
// -costco-batch 1…dain.MaxBatch cells, -ratio 0…dain.MaxRatio, -epochs
// and -patience 1…MaxEpochs, -layers widths 1…model.MaxWidth; an error
// names the flag and the limit.
func FinishConfig(c *dain.Config, f *Input, stderr io.Writer) error {
	if len(f.Layers) > 0 {
		c.Layers = f.Layers
	}
	if f.IndexBase < -1 {
		return fmt.Errorf("-index-base %d: want 0, 1 (or -1 for the format's own)", f.IndexBase)
	}
	if err := CheckCaps(c); err != nil {
		return err
	}
	if !f.Quiet {
		c.Progress = stderr
	}
	return c.Validate()
}

// MaxEpochs is the cap of -epochs and -patience.
const MaxEpochs = 1 << 20

// CheckCaps reports the first numeric flag of c outside its limits,
// naming the flag (-batch, -costco-batch, -ratio, -epochs, -patience,
// -layers, -rank, -channels) and the limit.
func CheckCaps(c *dain.Config) error {
	for _, b := range []struct {
		flag string
		v    int
	}{{"-batch", c.Batch}, {"-costco-batch", c.CoSTCoBatch}} {
		if b.v < 1 || b.v > dain.MaxBatch {
			return fmt.Errorf("%s %d: want 1…%d cells", b.flag, b.v, dain.MaxBatch)
		}
	}
	for _, e := range []struct {
		flag string
		v    int
	}{{"-epochs", c.Epochs}, {"-patience", c.Patience}} {
		if e.v < 1 || e.v > MaxEpochs {
			return fmt.Errorf("%s %d: want 1…%d", e.flag, e.v, MaxEpochs)
		}
	}
	for _, w := range []struct {
		flag string
		v    int
	}{{"-rank", c.Rank}, {"-channels", c.Channels}} {
		if w.v < 1 || w.v > model.MaxWidth {
			return fmt.Errorf("%s %d: want 1…%d", w.flag, w.v, model.MaxWidth)
		}
	}
	if len(c.Layers) > model.MaxLayers {
		return fmt.Errorf("-layers: %d widths, above the limit %d", len(c.Layers), model.MaxLayers)
	}
	for _, w := range c.Layers {
		if w > model.MaxWidth {
			return fmt.Errorf("-layers %v: width %d above the limit %d", (*IntList)(&c.Layers).String(), w, model.MaxWidth)
		}
	}
	if !(c.Ratio >= 0) || math.IsInf(c.Ratio, 0) {
		return fmt.Errorf("-ratio %v: want a finite number > 0", c.Ratio)
	}
	if c.Ratio > dain.MaxRatio {
		return fmt.Errorf("-ratio %v: above the limit %d (new cells per training cell)", c.Ratio, dain.MaxRatio)
	}
	return nil
}

// CheckLayers reports, as a usage error, a -layers that does not fit the
// tensor's order.
func CheckLayers(c *dain.Config, order int) error {
	if c.Layers == nil {
		return nil
	}
	if err := nn.CheckLayers(c.Layers, order); err != nil {
		return fmt.Errorf("%w: -layers %v: %v", ErrUsage, (*IntList)(&c.Layers).String(), err)
	}
	return nil
}

// NewCUDA opens the CUDA backend with options o. It returns an error,
// never a nil *cuda.Backend in a non-nil interface, when no driver or
// device is usable.
func NewCUDA(o cuda.Options) (compute.Backend, error) {
	be, err := cuda.NewWith(o)
	if err != nil {
		return nil, err
	}
	return be, nil
}

// CUDAOptions returns the options of the CUDA backend that f's -device,
// -precision, -gemm-tune and -gemm-serial say, with $DAINX_CUDA_SYNC and
// $DAINX_LIBCUDA (CUDAEnvOptions): every setting explicit, as the backend
// reads no environment. A bad value is a usage error naming its flag.
func CUDAOptions(f *Input) (cuda.Options, error) {
	prec, err := compute.ParsePrecision(f.Precision)
	if err != nil {
		return cuda.Options{}, fmt.Errorf("%w: -%v", ErrUsage, err)
	}
	if f.Device < 0 {
		return cuda.Options{}, fmt.Errorf("%w: -device %d: want a device ordinal (0, 1, …)", ErrUsage, f.Device)
	}
	var tune cuda.GemmTune
	if f.GemmTune == "" {
		if tune, err = GemmTuneFromEnv(); err != nil {
			return cuda.Options{}, fmt.Errorf("%w: %v (or give -gemm-tune)", ErrUsage, err)
		}
	} else if tune, err = cuda.ParseGemmTune(f.GemmTune); err != nil {
		why := ""
		if f.GemmTune == os.Getenv(EnvGemmTune) {
			why = " ($" + EnvGemmTune + ", its default)"
		}
		return cuda.Options{}, fmt.Errorf("%w: -gemm-tune %q%s: want off, model or time", ErrUsage, f.GemmTune, why)
	}
	serial, err := ParseGemmSerial(f.GemmSerial)
	if err != nil {
		return cuda.Options{}, err
	}
	o := CUDAEnvOptions()
	o.Device, o.Precision, o.GemmTune, o.SerialSplitK = f.Device, prec, tune, serial
	return o, nil
}

// OpenBackend returns the backend that f's -backend, -device, -precision
// and -gemm-tune say and, when the choice was automatic, a sentence
// saying why it was made. Each call opens a backend of its own; the
// caller closes it.
func OpenBackend(f *Input) (compute.Backend, string, error) {
	o, err := CUDAOptions(f)
	if err != nil {
		return nil, "", err
	}
	prec := o.Precision
	switch f.Backend {
	case "cpu":
		if prec != compute.FP32 {
			return nil, "", fmt.Errorf("%w: -precision %s is for -backend cuda (tensor cores); the CPU backend multiplies in fp32", ErrUsage, prec)
		}
		return cpu.New(), "", nil
	case "cuda":
		be, err := NewCUDA(o)
		if err != nil {
			return nil, "", fmt.Errorf("-backend cuda: %w", err)
		}
		return be, "", nil
	case "auto":
		be, err := NewCUDA(o)
		if err == nil {
			return be, "chosen automatically: " + be.Device(), nil
		}
		cb := cpu.New()
		why := fmt.Sprintf("chosen automatically, CUDA unavailable (%s); %s", shortCUDAError(err), cb.Device())
		if prec != compute.FP32 {
			why += "; fp32 instead of -precision " + prec.String()
		}
		return cb, why, nil
	default:
		return nil, "", fmt.Errorf("%w: -backend %q: want auto, cpu or cuda", ErrUsage, f.Backend)
	}
}

// shortCUDAError is err in one short clause: "no CUDA driver found" for a
// machine without libcuda (the paths tried, hundreds of characters, are
// printed with DAINX_VERBOSE=1), else err's message.
func shortCUDAError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "no CUDA driver: tried"); i >= 0 && os.Getenv(EnvVerbose) != "1" {
		return "no CUDA driver found; DAINX_VERBOSE=1 lists the paths tried"
	}
	return msg
}

// Open opens the backend f names and, unless f.Quiet, says on stderr which
// was chosen when the choice was automatic.
func Open(f *Input, stderr io.Writer) (compute.Backend, error) {
	be, why, err := OpenBackend(f)
	if err != nil {
		return nil, err
	}
	if why != "" && !f.Quiet {
		fmt.Fprintf(stderr, "dainx: backend %s: %s\n", be.Name(), why)
	}
	return be, nil
}
