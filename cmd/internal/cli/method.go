package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/dainx/dainx/dain"
)

// methodFlags are the flags a method (a dain.Variant) may set.
var methodFlags = []string{"model", "predictor", "influence", "influence-layers", "entity", "sign", "temperature", "mix"}

// MethodNames returns every name -method accepts: the methods of `dainx
// eval` (dain.Variants), then the generic cell makers that are not one of
// them (dain.Methods: random, near-cells, dain-average, …), whose value
// predictor -predictor chooses.
func MethodNames() []string {
	var out []string
	for _, v := range dain.Variants {
		out = append(out, v.Name)
	}
	for _, m := range dain.Names(dain.Methods) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// methodHelp is -method's help: every name once.
func methodHelp() string {
	var b strings.Builder
	b.WriteString("augmentation `method`, the same names as dainx eval's -methods:")
	for _, v := range dain.Variants {
		fmt.Fprintf(&b, "\n    %s: %s (%s)", v.Name, v.Doc, v.Role)
	}
	var extra []string
	for _, c := range dain.Methods {
		if _, ok := dain.VariantNamed(c.Name); !ok {
			extra = append(extra, fmt.Sprintf("\n    %s: %s", c.Name, c.Doc))
		}
	}
	if len(extra) > 0 {
		b.WriteString("\nand the generic cell makers, valued by -predictor:")
		b.WriteString(strings.Join(extra, ""))
	}
	return b.String()
}

// ApplyMethod sets c for the method name: a dain.Variant's settings (a
// flag among -model, -predictor, -influence, -influence-layers, -entity,
// -sign, -temperature and -mix given on fs's command line keeps its value)
// or, for a generic cell maker, c.Method. It returns a usage error for a
// name that is neither.
func ApplyMethod(fs *flag.FlagSet, c *dain.Config, name string) error {
	if v, ok := dain.VariantNamed(name); ok {
		given := map[string]string{}
		fs.Visit(func(f *flag.Flag) {
			if slices.Contains(methodFlags, f.Name) {
				given[f.Name] = f.Value.String()
			}
		})
		c.Method = "dain"
		v.Set(c)
		for n, val := range given {
			if err := fs.Set(n, val); err != nil {
				return fmt.Errorf("%w: -%s %s: %v", ErrUsage, n, val, err)
			}
		}
		return nil
	}
	if slices.Contains(dain.Names(dain.Methods), name) {
		c.Method = dain.MethodName(name)
		return nil
	}
	return fmt.Errorf("%w: -method %q: want one of %s", ErrUsage, name, strings.Join(MethodNames(), ", "))
}
