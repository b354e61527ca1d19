package cluster

import (
	"errors"
	"fmt"
)

// ErrOtherProcess is the error of the processes of a run spread over
// processes that did not fail when another did (which reports its own).
var ErrOtherProcess = errors.New("another process failed")

// ErrAgreed marks (errors.Is) an error that every process of a run spread
// over processes returned at the same point, each its own or
// ErrOtherProcess: none is left waiting in a collective, so the job may
// end with MPI_Finalize rather than MPI_Abort.
var ErrAgreed = errors.New("every process failed")

// Agree returns err on the process that has it, an error saying that
// another process failed (ErrOtherProcess, its message prefixed by what
// and ": ") on the others when any has one, and nil when none has. Every
// process of cl must call it at the same point (it sums one int64 over
// them); every process then returns an error there or none does, each
// marked ErrAgreed, so the job can end without MPI_Abort.
func Agree(cl Cluster, err error, what string) error {
	flag := []int64{0}
	if err != nil {
		flag[0] = 1
	}
	cl.SumI64(flag)
	switch {
	case err != nil:
		return agreed{err}
	case flag[0] > 0:
		return agreed{fmt.Errorf("%s: %w", what, ErrOtherProcess)}
	}
	return nil
}

// Agreed returns err marked ErrAgreed (errors.Is), its message and chain
// unchanged: an error that every process is known to return at the same
// point without a collective (each finds it in the same data). err must
// not be nil.
func Agreed(err error) error { return agreed{err} }

// agreed is an error that every process returned (ErrAgreed).
type agreed struct{ error }

func (a agreed) Is(target error) bool { return target == ErrAgreed }
func (a agreed) Unwrap() error        { return a.error }
