package tensor

import (
	"os"
	"reflect"
	"testing"

	"github.com/dainx/dainx/internal/realdata"
)

func realFile(tb testing.TB, name string) string { return realdata.Path(tb, name) }

func TestRealData(t *testing.T) {
	for _, c := range []struct {
		name string
		nnz  int
		dims []int
	}{
		{"synthetic_10K.tsv", 10000, []int{1000, 1000, 1000}},
		{"movielens_latest_small.tsv.gz", 100836, []int{610, 9724, 8215}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := realFile(t, c.name)
			x, err := ReadFile(p, ReadOptions{Format: FormatOf(p), IndexBase: -1})
			if err != nil {
				t.Fatal(err)
			}
			if x.NNZ() != c.nnz || !reflect.DeepEqual(x.Dims, c.dims) {
				t.Errorf("nnz %d dims %v, want %d %v", x.NNZ(), x.Dims, c.nnz, c.dims)
			}
			if err := x.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func BenchmarkReadMovingMNIST(b *testing.B) {
	p := realFile(b, "movingmnist100.tsv.gz")
	raw, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		x, err := ReadFile(p, ReadOptions{IndexBase: -1})
		if err != nil {
			b.Fatal(err)
		}
		if x.NNZ() != 819200 || !reflect.DeepEqual(x.Dims, []int{100, 20, 64, 64}) {
			b.Fatalf("nnz %d dims %v", x.NNZ(), x.Dims)
		}
	}
}
