package main

import (
	"errors"
	"fmt"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/compute/cpu"
)

var errUsage = errors.New("usage")

// newCUDA opens the CUDA backend (set in cuda_backend.go).
var newCUDA func() (compute.Backend, error)

// openBackend returns the backend named by the -backend flag and, when the
// choice was automatic, a sentence saying why it was made.
func openBackend(name string) (compute.Backend, string, error) {
	switch name {
	case "cpu":
		return cpu.New(), "", nil
	case "cuda":
		be, err := newCUDA()
		if err != nil {
			return nil, "", fmt.Errorf("-backend cuda: %w", err)
		}
		return be, "", nil
	case "auto":
		be, err := newCUDA()
		if err == nil {
			return be, "chosen automatically: " + be.Device(), nil
		}
		c := cpu.New()
		return c, fmt.Sprintf("chosen automatically, CUDA unavailable (%v); %s", err, c.Device()), nil
	default:
		return nil, "", fmt.Errorf("%w: -backend %q: want auto, cpu or cuda", errUsage, name)
	}
}
