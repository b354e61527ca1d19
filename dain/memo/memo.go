// Package memo is the memo of an experiment's stage results (package
// dain's Experiment): each stage, keyed by its value, computed once on
// first use, its result kept with its wall time.
package memo

// Map holds the result and wall time of each stage computed so far.
type Map[K comparable, V any] map[K]*Done[V]

// Done is a stage's result and its wall time in seconds.
type Done[V any] struct {
	Val     V
	Seconds float64
}

// Get returns the memoised result of k, computing it with f (which
// returns the result and its own wall time) on first use; an error of f
// is returned and nothing kept.
func (m Map[K, V]) Get(k K, f func() (V, float64, error)) (V, error) {
	if d := m[k]; d != nil {
		return d.Val, nil
	}
	v, secs, err := f()
	if err != nil {
		return v, err
	}
	m[k] = &Done[V]{v, secs}
	return v, nil
}

// Seconds returns the wall time of k, 0 if it was not computed.
func (m Map[K, V]) Seconds(k K) float64 {
	if d := m[k]; d != nil {
		return d.Seconds
	}
	return 0
}
