package main

import (
	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
)

// errUsage marks a bad command line (exit code 2).
var errUsage = cli.ErrUsage

// newCUDA opens the CUDA backend on device dev with GEMM precision prec and
// the 64×64 GEMM kernels, whatever the environment says (cli.NewCUDA).
func newCUDA(dev int, prec compute.Precision) (compute.Backend, error) {
	return cli.NewCUDA(cuda.Options{Device: dev, Precision: prec, GemmTune: cuda.GemmTuneOff, SerialSplitK: cuda.SerialSplitKOff})
}
