package dain

import (
	"context"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain/final"
)

// Uncertainty is cell importance from the bayes-fm chain on the training
// cells alone (issue 51: placement for a Bayesian final model): α_z is the
// posterior variance of its prediction at training cell z, the variance
// over its kept samples (bayes.Model.Variance), or with Influence that
// variance times Influence's |α_z| (uncertainty × influence). An entity
// whose cells the chain is unsure of then draws more new cells. The scores
// are in the order of Model's training set, whose rows the entity
// aggregation reads.
type Uncertainty struct {
	Model     Embedding
	Influence CellImportance // nil: the variance alone
}

func (s Uncertainty) deps() []stage {
	if s.Influence != nil {
		return []stage{s.Model, s.Influence}
	}
	return []stage{s.Model}
}

func (s Uncertainty) scores(ctx context.Context, e *Experiment) (compute.F32, *trained, error) {
	var inf compute.F32
	if s.Influence != nil {
		v, _, err := s.Influence.scores(ctx, e)
		if err != nil {
			return nil, nil, err
		}
		inf = v
	}
	t, err := e.model(ctx, s.Model)
	if err != nil {
		return nil, nil, err
	}
	v, err := e.cellScores.Get(s, func() (compute.F32, float64, error) {
		t0 := time.Now()
		m, err := e.bayesAloneModel(ctx)
		if err != nil {
			return nil, 0, err
		}
		var influence func() ([]float32, error)
		if inf != nil {
			influence = func() ([]float32, error) { return e.hostScores(inf) }
		}
		alpha, err := final.Uncertainty(m, e.Train, influence, s.name())
		if err != nil {
			return nil, 0, err
		}
		b := e.be.Alloc(len(alpha))
		e.be.Upload(b, alpha)
		e.owned = append(e.owned, b)
		return b, time.Since(t0).Seconds(), nil
	})
	return v, t, err
}

// name is s's -influence value.
func (s Uncertainty) name() string {
	if s.Influence != nil {
		return InfluenceUncertaintyTracIn
	}
	return InfluenceUncertainty
}
