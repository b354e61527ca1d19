package eval

import (
	"bytes"
	"fmt"
	"math"

	"github.com/dainx/dainx/dain"
)

// diagMeans averages the runs' importance diagnostics mode by mode; nil
// for no runs.
func diagMeans(runs [][]dain.ModeDiagnostics) []DiagMean {
	if len(runs) == 0 {
		return nil
	}
	out := make([]DiagMean, len(runs[0]))
	for n := range out {
		var rho, share, train []float64
		for _, r := range runs {
			if n >= len(r) {
				continue
			}
			if r[n].Spearman != nil {
				rho = append(rho, *r[n].Spearman)
			}
			share, train = append(share, r[n].TopShareNew), append(train, r[n].TopShareTrain)
		}
		out[n] = DiagMean{Spearman: math.NaN(), N: len(share)}
		if len(rho) > 0 {
			out[n].Spearman, _ = MeanStd(rho)
		}
		out[n].TopShareNew, _ = MeanStd(share)
		out[n].TopShareTrain, _ = MeanStd(train)
	}
	return out
}

// diagJSON is the summary.json form of a cell's diagnostics: per mode,
// null where undefined.
type diagJSON struct {
	Spearman      []*float64 `json:"spearman_importance_frequency,omitempty"`
	TopShareNew   []float64  `json:"top1pct_share_new_cells,omitempty"`
	TopShareTrain []float64  `json:"top1pct_share_training_cells,omitempty"`
}

func diagToJSON(d []DiagMean) diagJSON {
	var out diagJSON
	for _, m := range d {
		var rho *float64
		if !math.IsNaN(m.Spearman) {
			v := m.Spearman
			rho = &v
		}
		out.Spearman = append(out.Spearman, rho)
		out.TopShareNew = append(out.TopShareNew, m.TopShareNew)
		out.TopShareTrain = append(out.TopShareTrain, m.TopShareTrain)
	}
	return out
}

// writeDiagnostics appends to a summary the importance diagnostics of
// every method that has them, at the largest ratio: per mode the Spearman
// correlation of entity importance with entity frequency, and the share of
// the new cells on the top 1% of entities by importance (of the training
// cells in parentheses).
func (s Summary) writeDiagnostics(b *bytes.Buffer) {
	if len(s.Ratios) == 0 {
		return
	}
	q := s.Ratios[len(s.Ratios)-1]
	modes := 0
	for _, m := range s.Methods {
		modes = max(modes, len(s.Cells[m][q].Diag))
	}
	if modes == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Entity importance against entity frequency, at %g%%\n\n", 100*q)
	b.WriteString("Per mode, mean over the splits: ρ, the Spearman correlation of the entity importance the new cells were drawn from with each entity's number of training cells (entities with at least one; ties averaged; – where the importance is constant); top 1%, the share of the new cells on the 1% of entities of highest importance (of the training cells, in parentheses). Methods that draw from no entity importance are left out.\n\n| method |")
	for n := 1; n <= modes; n++ {
		fmt.Fprintf(b, " ρ mode %d |", n)
	}
	for n := 1; n <= modes; n++ {
		fmt.Fprintf(b, " top 1%% mode %d |", n)
	}
	b.WriteString("\n|---|")
	for n := 0; n < 2*modes; n++ {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, m := range s.Methods {
		d := s.Cells[m][q].Diag
		if len(d) == 0 {
			continue
		}
		fmt.Fprintf(b, "| %s |", m)
		for n := 0; n < modes; n++ {
			if n >= len(d) || math.IsNaN(d[n].Spearman) {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(b, " %.3f |", d[n].Spearman)
		}
		for n := 0; n < modes; n++ {
			if n >= len(d) {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(b, " %.3f (%.3f) |", d[n].TopShareNew, d[n].TopShareTrain)
		}
		b.WriteString("\n")
	}
}
