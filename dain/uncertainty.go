package dain

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dainx/dainx/compute"
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
	v, err := e.cellScores.get(s, func() (compute.F32, float64, error) {
		t0 := time.Now()
		m, err := e.bayesAloneModel(ctx)
		if err != nil {
			return nil, 0, err
		}
		if m.NumSamples() < 2 {
			return nil, 0, fmt.Errorf("dain: -influence %s needs at least 2 kept bayes-fm samples (-bayes-samples above -bayes-burnin + 1)", s.name())
		}
		variance, err := m.Variance(e.Train)
		if err != nil {
			return nil, 0, fmt.Errorf("dain: bayes-fm's posterior variance: %w", err)
		}
		alpha := make([]float32, len(variance))
		for z, x := range variance {
			alpha[z] = float32(x)
		}
		if inf != nil {
			a, err := e.hostScores(inf)
			if err != nil {
				return nil, 0, err
			}
			for z := range alpha {
				alpha[z] *= float32(math.Abs(float64(a[z])))
			}
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
