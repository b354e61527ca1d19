package main

import (
	"fmt"

	"github.com/dainx/dainx/internal/cli"
	"github.com/dainx/dainx/nn"
)

// modelSaver returns the dain.Keep.Model function of -model-out.
func modelSaver(a *cli.Augment, base int) func(role string, net *nn.Net) error {
	return func(role string, net *nn.Net) error {
		return fmt.Errorf("-model-out: not built yet")
	}
}
