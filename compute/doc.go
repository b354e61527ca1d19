// Package compute defines the Backend interface: the small set of DAIN-specific
// operations (embedding gather, fused Linear layers, the pairwise terms of a
// factorization machine, MSE gradient, Adam with optional L2, TracIn
// scoring, entity aggregation, alias sampling) that the nn, tracin and
// sampling packages are written against, plus the counter-based random number
// generator that makes sampling identical on every backend.
//
// It is not a tensor library. Every operation exists because a step of DAIN
// (Oh, Kim, Rossi, Kumar, CIKM 2021, Algorithm 1) needs it, and each is
// specified by a float64 reference loop in package compute/ref. Two
// implementations exist: compute/cpu (Go with AVX2 assembly, gonum as the
// portable path) and cuda (hand-written kernels). Both pass the conformance
// suite in compute/computetest.
//
// # Notation
//
//	B   cells in a batch (rows)
//	N   tensor order (number of modes)
//	E   embedding width per mode
//	I,O input and output width of a Linear layer
//	R   total embedding rows, Σₙ Iₙ over all modes
//	T   cells in a pass (train, validation, …)
//
// # Layout
//
// All matrices are row-major and densely packed: a B×I matrix is a vector of
// length B·I whose element (b, i) sits at b·I+i. A Linear layer's weight is
// stored O×I (PyTorch's nn.Linear layout), so y = x·Wᵀ + b. Cell indices are
// stored as global embedding rows: the cell (i₁,…,i_N) becomes the N int32
// values off₁+i₁, …, off_N+i_N, where offₙ = Σ_{m<n} I_m, so one embedding table
// of R rows serves every mode.
//
// # Buffers
//
// F32 and I32 are vectors owned by one backend, counted in elements. Slice
// returns a view sharing storage; a view may be passed wherever a buffer is
// expected. Passing a buffer of one backend to another panics.
//
// # Errors
//
// A panic means a caller bug: a length that does not match, a buffer of
// another backend, a negative size. An error means the environment failed
// (a driver call, an out-of-memory device). Operations return nothing; a
// backend whose device fails records the first error, turns every later
// operation into a no-op and reports the error from Sync, Download and
// Close, in the manner of bufio.Writer.
//
// # Overwrite and accumulate
//
// Every operation states whether it overwrites its output (=) or adds to it
// (+=). No output may alias an input unless the operation says so.
package compute
