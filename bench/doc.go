// Package bench holds dainx's benchmarks and the definitions they share:
// Ops (every backend operation at the default MLP's shapes, batch 1024),
// TrainStep (one Adam step of the default MLP) and TracInPass (TracIn's
// scoring of a batch), used by the Go benchmarks in this package (make
// bench-go) and by bench/cmd/benchrun (make bench), which also runs the
// PyTorch peer in bench/peers and dainx end to end, and records the results
// with the machine they ran on under bench/results/.
package bench
