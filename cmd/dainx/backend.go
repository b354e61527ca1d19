package main

import (
	"errors"
	"fmt"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/cuda"
)

var errUsage = errors.New("usage")

// newCUDA opens the CUDA backend on device dev with GEMM precision prec. It
// returns an error, never a nil *cuda.Backend in a non-nil interface, when
// no driver or device is usable.
func newCUDA(dev int, prec compute.Precision) (compute.Backend, error) {
	be, err := cuda.NewWith(cuda.Options{Device: dev, Precision: prec})
	if err != nil {
		return nil, err
	}
	return be, nil
}

// backendChoice is what the -backend, -device and -precision flags say.
type backendChoice struct {
	name      string // auto, cpu or cuda
	device    int    // CUDA device ordinal
	precision string // fp32, tf32 or 3xtf32
}

// openBackend returns the backend c names and, when the choice was
// automatic, a sentence saying why it was made.
func openBackend(c backendChoice) (compute.Backend, string, error) {
	prec, err := compute.ParsePrecision(c.precision)
	if err != nil {
		return nil, "", fmt.Errorf("%w: -%v", errUsage, err)
	}
	if c.device < 0 {
		return nil, "", fmt.Errorf("%w: -device %d: want a device ordinal (0, 1, …)", errUsage, c.device)
	}
	switch c.name {
	case "cpu":
		if prec != compute.FP32 {
			return nil, "", fmt.Errorf("%w: -precision %s is for -backend cuda (tensor cores); the CPU backend multiplies in fp32", errUsage, prec)
		}
		return cpu.New(), "", nil
	case "cuda":
		be, err := newCUDA(c.device, prec)
		if err != nil {
			return nil, "", fmt.Errorf("-backend cuda: %w", err)
		}
		return be, "", nil
	case "auto":
		be, err := newCUDA(c.device, prec)
		if err == nil {
			return be, "chosen automatically: " + be.Device(), nil
		}
		cb := cpu.New()
		why := fmt.Sprintf("chosen automatically, CUDA unavailable (%v); %s", err, cb.Device())
		if prec != compute.FP32 {
			why += "; fp32 instead of -precision " + prec.String()
		}
		return cb, why, nil
	default:
		return nil, "", fmt.Errorf("%w: -backend %q: want auto, cpu or cuda", errUsage, c.name)
	}
}
