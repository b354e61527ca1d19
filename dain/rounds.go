package dain

import (
	"context"

	"github.com/dainx/dainx/dain/spread"
	"github.com/dainx/dainx/dain/streams"
	"github.com/dainx/dainx/tensor"
)

// drawRounds makes n new cells from c's candidates, spread over the
// processes (spread.DrawRounds): the observed cells partitioned by owner
// (spread.OwnedObserved), each candidate's process drawn from the seed's stream
// shares; it sets e.augFirst and adds the draws and rejections to st.
func (e *Experiment) drawRounds(ctx context.Context, c spread.Candidates, shares uint64, n int, st *AugStats) (*tensor.COO, error) {
	owned := spread.OwnedObserved(e.sp.Cl, e.x.Dims, e.Train, e.Val, nil)
	ds := spread.DrawStats{Draws: st.Draws, RejectObserved: st.RejectObserved, RejectRepeat: st.RejectRepeat}
	aug, first, err := spread.DrawRounds(ctx, e.sp.Cl, e.x.Dims, owned, streams.New(e.cfg.Seed, shares), c, n, &ds)
	st.Draws, st.RejectObserved, st.RejectRepeat = ds.Draws, ds.RejectObserved, ds.RejectRepeat
	if err != nil {
		return nil, err
	}
	e.augFirst = first
	return aug, nil
}
