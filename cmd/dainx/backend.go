package main

import (
	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
)

// errUsage marks a bad command line (exit code 2).
var errUsage = cli.ErrUsage

// newCUDA opens the CUDA backend on device dev with GEMM precision prec and
// the 64×64 GEMM kernels, whatever $DAINX_GEMM_TUNE says (cli.NewCUDA;
// $DAINX_CUDA_SYNC and $DAINX_LIBCUDA apply, cli.CUDAEnvOptions).
func newCUDA(dev int, prec compute.Precision) (compute.Backend, error) {
	o := cli.CUDAEnvOptions()
	o.Device, o.Precision, o.GemmTune = dev, prec, cuda.GemmTuneOff
	return cli.NewCUDA(o)
}
