package config

import "testing"

// TestValueSourceChecked: a Values that is not one of ValueSources is
// refused.
func TestValueSourceChecked(t *testing.T) {
	if c := (Config{Values: "magic"}); c.checkValueSource() == nil {
		t.Error("-values magic accepted")
	}
}
