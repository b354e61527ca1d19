package main

import (
	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
)

// errUsage marks a bad command line (exit code 2).
var errUsage = cli.ErrUsage

// newCUDA opens the CUDA backend on device dev with GEMM precision prec
// (cli.NewCUDA).
func newCUDA(dev int, prec compute.Precision) (compute.Backend, error) {
	return cli.NewCUDA(dev, prec)
}
