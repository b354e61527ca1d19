package dain

import (
	"fmt"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/nn"
)

// Graphs is Config.Graphs: whether training replays each step as a graph
// on a backend that records them (CUDA; nn.TrainConfig.Eager is its
// opposite). Its pointer is a flag.Value (dainx -graphs), so a bad value
// is refused where it is parsed.
type Graphs string

// The values of Graphs; "" means GraphsOn.
const (
	GraphsOn  Graphs = "on"
	GraphsOff Graphs = "off"
)

// String returns g as the flag takes it.
func (g *Graphs) String() string { return string(*g) }

// Set parses on or off.
func (g *Graphs) Set(s string) error {
	switch v := Graphs(s); v {
	case GraphsOn, GraphsOff:
		*g = v
		return nil
	}
	return fmt.Errorf("want %s or %s", GraphsOn, GraphsOff)
}

// Exchange is Config.Exchange: how a run spread over processes (RunDist)
// sums the gradients of an embedding table that is not sharded. Its
// pointer is a flag.Value (dainx augment -exchange).
type Exchange string

// The values of Exchange; "" means ExchangeAuto.
const (
	// ExchangeAuto chooses per model by the table's rows and the rows a
	// step touches (nn.ChooseExchange).
	ExchangeAuto Exchange = "auto"
	// ExchangeDense sums the whole table's gradient (an all-reduce).
	ExchangeDense Exchange = "dense"
	// ExchangeSparse exchanges only the rows a step touched.
	ExchangeSparse Exchange = "sparse"
)

// String returns x as the flag takes it.
func (x *Exchange) String() string { return string(*x) }

// Set parses auto, dense or sparse.
func (x *Exchange) Set(s string) error {
	switch v := Exchange(s); v {
	case ExchangeAuto, ExchangeDense, ExchangeSparse:
		*x = v
		return nil
	}
	return fmt.Errorf("want %s, %s or %s", ExchangeAuto, ExchangeDense, ExchangeSparse)
}

// graphs returns c.Graphs with "" resolved (on).
func (c *Config) graphs() Graphs {
	if c.Graphs == "" {
		return GraphsOn
	}
	return c.Graphs
}

// exchange returns the exchange of a model's unsharded table of rows
// rows, trained in batches of batch cells of an order-N tensor:
// c.Exchange, or with auto ("" too) nn.ChooseExchange's choice.
func (c *Config) exchange(rows, batch, order int) string {
	if x := c.Exchange; x == ExchangeDense || x == ExchangeSparse {
		return string(x)
	}
	return nn.ChooseExchange(rows, batch, order)
}

// checkSettings reports a Graphs or Exchange value that is not one of
// theirs (a Config made in Go; the flags refuse them when parsed).
func (c *Config) checkSettings() error {
	if g := c.Graphs; g != "" && g != GraphsOn && g != GraphsOff {
		return fmt.Errorf("graphs %q: want %s or %s", g, GraphsOn, GraphsOff)
	}
	if x := c.Exchange; x != "" && x != ExchangeAuto && x != ExchangeDense && x != ExchangeSparse {
		return fmt.Errorf("exchange %q: want %s, %s or %s", x, ExchangeAuto, ExchangeDense, ExchangeSparse)
	}
	return nil
}

// newReport returns the report of a run of c on backend be over a tensor
// of the given dims and nnz cells, split into counts (train, validation,
// test) with fingerprint sp, before anything is trained: the run's shape
// and every setting the report records, resolved (auto and "" made the
// effective values). It is the one place where a setting is copied from
// Config to Report, for Run and RunDist alike. The automatic embedding
// optimisers are said through logf.
func (c *Config) newReport(be compute.Backend, dims []int, nnz int, counts [3]int, sp splitPrint, logf func(string, ...any)) Report {
	rep := Report{
		Dims: append([]int(nil), dims...), NNZ: nnz, Backend: be.Name(), Device: be.Device(),
		Seed: c.Seed, Ratio: c.Ratio, Layers: c.Layers, Epochs: c.Epochs, Batch: c.Batch,
		Patience: c.Patience, LR: c.LR, TestFrac: c.TestFrac, ValFrac: c.ValFrac,
		Method: c.Method, Model: c.Model, Predictor: c.Predictor, Influence: c.Influence,
		InfLayers: c.InfluenceLayers, Entity: c.Entity, FinalModel: c.finalModel(), Values: c.values(),
		NTrain: counts[0], NVal: counts[1], NTest: counts[2],
		Graphs: string(c.graphs()),
	}
	if c.Influence == "in-run" {
		rep.InfluenceEvery, rep.InfluenceValSample = c.influenceEvery(), min(c.influenceValSample(), rep.NVal)
	}
	if t, ok := be.(interface{ GemmTune() string }); ok {
		rep.GemmTune = t.GemmTune()
	}
	rep.EmbeddingOptimizer, rep.EmbeddingOptimizers = c.embeddingOptimizerSetting(), c.EmbeddingOptimizers(dims, logf)
	rep.Split = c.split()
	rep.SplitFingerprint = sp.String()
	rep.NoTest = rep.NTest == 0
	return rep
}
