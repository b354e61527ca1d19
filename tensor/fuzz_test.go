package tensor

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzRead checks that Read never panics, that every failure is a
// *ParseError, and that whatever it accepts is valid and survives a
// Write/Read round trip.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"0\t1\t2\t0.5\n", "# c\n1 1 1\n2 2 2\n", "1 1 1\n1 1 2\n", "", "0 x 1", "3 nan\n",
		"2147483646 0 1e300\n", "-0 +0 -0\n", "\x1f\x8b\x08\x00", "1\t2\r\n3\t4\r\n",
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, tns bool) {
		format := TSV
		if tns {
			format = TNS
		}
		c, err := Read(bytes.NewReader(in), "fuzz", ReadOptions{Format: format, IndexBase: -1})
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid tensor: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, c, WriteOptions{Format: format, IndexBase: -1}); err != nil {
			t.Fatal(err)
		}
		d, err := Read(&buf, "again", ReadOptions{Format: format, IndexBase: -1})
		if err != nil || !reflect.DeepEqual(c, d) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, c, d)
		}
	})
}
