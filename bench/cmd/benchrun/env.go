package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
)

// The cuda package reads no environment: benchrun, a command, reads the
// variables the dainx commands read for the CUDA backend
// (docs/environment.md) and passes them as cuda.Options.

// deviceFromEnv returns the device ordinal $DAINX_DEVICE names, 0 when it
// is unset or empty.
func deviceFromEnv() (int, error) {
	s := os.Getenv("DAINX_DEVICE")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("cuda: DAINX_DEVICE=%q: want a device ordinal (0, 1, …)", s)
	}
	return n, nil
}

// cudaOptions returns the options of the CUDA backend on device dev in
// precision p with the settings of the environment: DAINX_GEMM_TUNE (off
// when unset), DAINX_GEMM_SERIAL=1, DAINX_CUDA_SYNC=1 and DAINX_LIBCUDA.
func cudaOptions(dev int, p compute.Precision) (cuda.Options, error) {
	o := cuda.Options{Device: dev, Precision: p, SerialSplitK: os.Getenv("DAINX_GEMM_SERIAL") == "1",
		Sync: os.Getenv("DAINX_CUDA_SYNC") == "1", Library: os.Getenv("DAINX_LIBCUDA")}
	if v := os.Getenv("DAINX_GEMM_TUNE"); v != "" {
		t, err := cuda.ParseGemmTune(v)
		if err != nil {
			return o, fmt.Errorf("cuda: DAINX_GEMM_TUNE=%q: want off, model or time", v)
		}
		o.GemmTune = t
	}
	return o, nil
}

// newCUDA opens the CUDA backend cudaOptions(dev, p) describes.
func newCUDA(dev int, p compute.Precision) (*cuda.Backend, error) {
	o, err := cudaOptions(dev, p)
	if err != nil {
		return nil, err
	}
	return cuda.NewWith(o)
}

// newCUDAFromEnv opens the CUDA backend on the device of $DAINX_DEVICE in
// fp32.
func newCUDAFromEnv() (*cuda.Backend, error) {
	dev, err := deviceFromEnv()
	if err != nil {
		return nil, err
	}
	return newCUDA(dev, compute.FP32)
}
