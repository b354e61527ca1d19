// Package streams lists the random streams a DAIN run derives from its
// seed (Config.Seed), one per consumer, so that changing one step never
// shifts another's numbers, and makes their generators: PCG seeded with
// the seed and 0x5eed0000 + the stream. The values are part of what a
// seed means: a run's results and checkpoints depend on them, so a
// stream keeps its number.
package streams

import "math/rand/v2"

// The streams of the pipeline's steps.
const (
	Init = iota + 1
	Shuffle
	InitAfter
	ShuffleAfter
	Sample
	InitCoSTCo
	ShuffleCoSTCo
	Random
	Duplicate
	Replace
	Bayes          // the bayes-fm final model's chain
	BayesPredictor // the bayes-fm value predictor's chain
	// DuplicateShares splits duplication's draws among the processes
	// (spread.DistinctShares; drawn only with several).
	DuplicateShares
	// ReplaceShares draws each entity-replacement candidate's process
	// (spread.DrawRounds; only with several).
	ReplaceShares
)

// The streams of the placement study's variants, kept apart from the
// steps' list so that neither shifts the other.
const (
	Near = 0x100 + iota
	// NearShares draws each near-cells candidate's process (only with
	// several).
	NearShares
)

// Oracle is the stream of the oracle's noise (-values oracle), apart from
// the lists above so that none shifts another.
const Oracle = 0x200

// InRunSample draws in-run's validation sample (kept apart from the
// steps' and the variants' streams).
const InRunSample = 0x300

// Rank is process rank's own stream of a per-process draw: stream itself
// on process 0 (so that a cluster of one draws as one process), a stream
// apart from every constant stream on the others.
func Rank(stream uint64, rank int) uint64 {
	return stream + uint64(rank)<<40
}

// New returns the generator of stream of seed.
func New(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed0000+stream))
}

// NewPCG is New with its source, whose state a checkpoint saves.
func NewPCG(seed uint64, stream uint64) (*rand.Rand, *rand.PCG) {
	p := rand.NewPCG(seed, 0x5eed0000+stream)
	return rand.New(p), p
}
