package config

import (
	"fmt"
)

// ValueSource is Config.Values: where new cells' values come from.
// ValueSources lists its accepted values; "" means ValuesPredictor (the
// table's Unset). It is recorded (report, checkpoint, provenance) as its
// string.
type ValueSource string

// The accepted Config.Values.
const (
	ValuesPredictor ValueSource = "predictor"
	ValuesOracle    ValueSource = "oracle"
)

// ValueSources are the accepted Config.Values values: where new cells'
// ValuesUsed come from.
var ValueSources = []Choice[struct{}]{
	{string(ValuesPredictor), "each method's own: its value predictor (-predictor), or the training values it keeps", struct{}{}},
	{string(ValuesOracle), "the generator's value plus noise of the tensor's σ (a tensor of dainx synth, whose generator -oracle names); duplication's copies keep their observed values", struct{}{}},
}

// ValuesUsed returns c.Values with "" read as the table's Unset
// (ValuesPredictor).
func (c Config) ValuesUsed() ValueSource { return Resolved[ValueSource](c, "Values") }

// checkValueSource reports a Values that is not one of ValueSources, an
// oracle without its generator, and a generator that cannot be.
func (c *Config) checkValueSource() error {
	if _, err := Lookup("values", string(c.ValuesUsed()), ValueSources); err != nil {
		return err
	}
	if c.ValuesUsed() != ValuesOracle {
		return nil
	}
	if c.Oracle == nil {
		return fmt.Errorf("values oracle: the tensor's generator is not known: a tensor made by dainx synth has one (dainx synth -generator-out FILE writes it; give it as -oracle FILE); other tensors have no oracle")
	}
	if err := c.Oracle.Check(); err != nil {
		return fmt.Errorf("values oracle: the generator: %w", err)
	}
	return nil
}
