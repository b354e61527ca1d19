// Command dainx runs DAIN, influence-guided data augmentation for neural
// tensor completion, on a sparse tensor.
//
//	dainx augment [flags]     train, score, sample, predict, retrain
//	dainx version
//
// Run "dainx augment -h" for the flags.
package main

import (
	"os"
)

func main() {
	setupMemory()
	stop := startCPUProfile()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
