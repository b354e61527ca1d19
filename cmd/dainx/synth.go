package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/internal/memlimit"
	"github.com/dainx/dainx/tensor"
)

func synth(args []string, stdout, stderr io.Writer) int {
	var dims intList = []int{1000, 1000, 1000, 1000}
	var (
		nnz, rank int
		noise     float64
		seed      uint64
		output    string
		format    string
		genOut    string
		maxMem    int64
	)
	fs := flag.NewFlagSet("dainx synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&dims, "dims", "comma-separated mode `sizes`")
	fs.IntVar(&nnz, "nnz", 1000000, "number of distinct `cells`, drawn uniformly over the grid")
	fs.IntVar(&rank, "rank", 10, "`rank` R of the random CP model that gives the values")
	fs.Float64Var(&noise, "noise", 0, "standard `deviation` of Gaussian noise added to each value")
	fs.Uint64Var(&seed, "seed", 1, "random `seed`")
	fs.StringVar(&output, "output", "", "output `file` (required); gzip if it ends in .gz; written atomically")
	fs.StringVar(&format, "format", "", "output `format`: tsv (0-based) or tns (1-based); empty: by extension")
	fs.StringVar(&genOut, "generator-out", "", "also write the generator (these arguments, as JSON) to this `file`: dainx augment and dainx eval -values oracle -oracle FILE value new cells by it")
	cli.BindMemory(fs, &maxMem)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: dainx synth -output FILE [flags]

Writes a synthetic tensor: nnz distinct cells drawn uniformly over the grid,
each valued Σ_r Πₙ Aₙ[iₙ, r] (+ noise) for factor matrices Aₙ with U(0,1)
entries. The defaults give the paper's Synthetic-1M (dims 1000⁴, 10⁶ cells).
-generator-out FILE also writes the generator, from which dainx augment
-values oracle -oracle FILE values new cells (the true value plus noise).

Flags:
`)
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if output == "" {
		return exitFor("synth", fmt.Errorf("%w: -output FILE is required", errUsage), nil, stderr)
	}
	f := tensor.FormatOf(output)
	if format != "" {
		v, err := tensor.ParseFormat(format)
		if err != nil {
			return exitFor("synth", fmt.Errorf("%w: -format: %v", errUsage, err), nil, stderr)
		}
		f = v
	}
	if err := synthMemory(dims, nnz, rank, maxMem); err != nil {
		return exitFor("synth", err, nil, stderr)
	}
	tx, outFile, err := beginOutput(output)
	if err != nil {
		return exitFor("synth", err, nil, stderr)
	}
	defer tx.Abort()
	genFile, err := tx.File(genOut) // nil when genOut is empty
	if err != nil {
		return exitFor("synth", err, nil, stderr)
	}
	g, err := tensor.NewGenerator(dims, nnz, rank, noise, seed)
	if err != nil {
		return exitFor("synth", fmt.Errorf("%w: %v", errUsage, err), nil, stderr)
	}
	t, err := g.Tensor()
	if err != nil {
		return exitFor("synth", fmt.Errorf("%w: %v", errUsage, err), nil, stderr)
	}
	if err := genFile.Write(g.WriteJSON); err != nil {
		return exitFor("synth", err, nil, stderr)
	}
	if err := commitTensor(tx, outFile, t, tensor.WriteOptions{Format: f, IndexBase: -1}); err != nil {
		return exitFor("synth", err, nil, stderr)
	}
	fmt.Fprintf(stdout, "dainx synth: wrote %d cells, dims %v, to %s\n", t.NNZ(), t.Dims, output)
	if genOut != "" {
		fmt.Fprintf(stdout, "dainx synth: wrote the generator to %s\n", genOut)
	}
	return exitOK
}

// synthCellCopies is how many copies of a cell synth holds at its peak
// (the cells drawn and the set that keeps them distinct), measured: 43
// bytes a cell of order 3 at 5M cells (2026-11-28).
const synthCellCopies = 2

// synthMemory refuses -nnz and -dims whose cells and factor matrices
// cannot fit maxMem (0: what the system says is available), before they
// are drawn (issue 46).
func synthMemory(dims []int, nnz, rank int, maxMem int64) error {
	rows := 0.0
	for _, d := range dims {
		rows += float64(d)
	}
	parts := []memlimit.Part{
		{What: "the cells", Flags: fmt.Sprintf("-nnz %d", nnz), Bytes: synthCellCopies * float64(4*len(dims)+8) * float64(nnz)},
		{What: "the factor matrices", Flags: fmt.Sprintf("-dims %v, -rank %d", []int(dims), rank), Bytes: 8 * rows * float64(rank)},
	}
	return memlimit.Check("the synthetic tensor", parts, memlimit.Limit(maxMem), maxMem)
}
