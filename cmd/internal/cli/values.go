package cli

import (
	"flag"
	"fmt"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

// BindValues registers -values (where new cells' values come from) and
// -oracle (the generator file that -values oracle needs), for dainx
// augment and dainx eval.
func BindValues(fs *flag.FlagSet, c *dain.Config, oracle *string) {
	if c.Values == "" {
		c.Values = dain.ValuesPredictor
	}
	BindSettings(fs, c, "values")
	fs.StringVar(oracle, "oracle", *oracle, "the generator `file` of the input tensor, which dainx synth -generator-out wrote with it, for -values oracle")
}

// LoadOracle reads the generator file of -oracle into c.Oracle when c asks
// for oracle values. It returns a usage error for -values oracle without
// -oracle or -oracle without -values oracle, and an error naming the file
// for one that is not a generator (tensor.ReadGenerator).
func LoadOracle(c *dain.Config, file string) error {
	switch {
	case c.Values != dain.ValuesOracle && file != "":
		return fmt.Errorf("%w: -oracle %s is for -values oracle (the values are -values %s's)", ErrUsage, file, c.Values)
	case c.Values != dain.ValuesOracle:
		return nil
	case file == "":
		return fmt.Errorf("%w: -values oracle needs -oracle FILE, the generator that dainx synth -generator-out wrote with the input tensor; a tensor not made by dainx synth has no oracle", ErrUsage)
	}
	g, err := tensor.ReadGenerator(file)
	if err != nil {
		return fmt.Errorf("-oracle: %w", err)
	}
	c.Oracle = g
	return nil
}
