// Package bench holds dainx's benchmarks: the backend operations at the
// default MLP's shapes and whole training steps, run by `make bench`. Results
// with the machine they ran on are recorded under bench/results/.
package bench
