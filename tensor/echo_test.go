package tensor

import (
	"fmt"
	"strings"
	"testing"
)

// TestErrorsEchoLittle: a bad field of megabytes is repeated in the error
// only up to maxEcho bytes, followed by "…" and its length, by the serial
// and the parallel parser alike; a line over the limit is named by file
// and line with the limit; an index too large for int32, in digits or a
// number's notation, is out of range with the file's limits.
func TestErrorsEchoLittle(t *testing.T) {
	big := 20 << 20
	x80 := strings.Repeat("x", maxEcho)
	cases := []struct {
		name, in, want string
	}{
		{"index field", "0 0 0 1\n0 " + strings.Repeat("x", big) + " 1 2\n",
			fmt.Sprintf(`f:2: index 2 (mode 2): %q… (%d bytes) is not an integer`, x80, big)},
		{"index digits", "0 0 0 1\n0 " + strings.Repeat("9", big) + " 1 2\n",
			fmt.Sprintf(`f:2: index %s… (%d bytes) in mode 2 is out of range: a 0-based file's indices go from 0 to 2147483646`, strings.Repeat("9", maxEcho), big)},
		{"negative digits", "0 0 0 1\n0 -" + strings.Repeat("9", big) + " 1 2\n",
			fmt.Sprintf(`f:2: negative index -%s… (%d bytes) in mode 2`, strings.Repeat("9", maxEcho-1), big+1)},
		{"value", "0 0 0 1\n0 1 1 " + strings.Repeat("z", big) + "\n",
			fmt.Sprintf(`f:2: value %q… (%d bytes) is not a number`, strings.Repeat("z", maxEcho), big)},
		{"value range", "0 0 0 1\n0 1 1 " + strings.Repeat("9", big) + "\n",
			fmt.Sprintf(`f:2: value %q… (%d bytes) is out of range for float64`, strings.Repeat("9", maxEcho), big)},
		{"utf-8 cut whole", "0 0 0 1\n0 " + strings.Repeat("é", big/2) + " 1 2\n",
			fmt.Sprintf(`f:2: index 2 (mode 2): %q… (%d bytes) is not an integer`, strings.Repeat("é", maxEcho/2), big)},
	}
	for _, c := range cases {
		for _, serial := range []bool{false, true} {
			_, err := Read(strings.NewReader(c.in), "f", ReadOptions{IndexBase: -1, serial: serial})
			if err == nil || err.Error() != c.want {
				msg := fmt.Sprint(err)
				t.Errorf("%s (serial %v): error of %d bytes %.300q; want %.300q", c.name, serial, len(msg), msg, c.want)
			}
		}
	}

	defer func(old int) { maxLine = old }(maxLine)
	maxLine = 1 << 10
	long := "0 0 0 1\n1 1 1 2\n0 1 1" + strings.Repeat(" ", 2*maxLine) + "5\n"
	for _, serial := range []bool{false, true} {
		for _, in := range [][]byte{[]byte(long), gz(t, []byte(long))} {
			_, err := Read(strings.NewReader(string(in)), "f", ReadOptions{IndexBase: -1, serial: serial})
			if want := "f:3: line longer than the limit of 1024 bytes"; err == nil || err.Error() != want {
				t.Errorf("long line (serial %v): %v; want %q", serial, err, want)
			}
		}
	}
}
