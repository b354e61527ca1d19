package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dainx/dainx/tensor"
)

// The runs under MPI (issue 23, make bench-dist): each size run once by
// one process without MPI and then under `mpiexec -n P … -dist mpi` for
// every P of -ranks, recording each rank's peak RSS (the report's
// dist.per_rank), the seconds per stage, the SHA-256 of the augmented
// cells and how many of them differ from one process's.

// DistRun is one tensor under P ranks.
type DistRun struct {
	Ranks int `json:"ranks"`
	Run
	// RankPeakMiB is each rank's peak RSS; Run.MaxRSSMiB is the largest.
	RankPeakMiB    []float64 `json:"rank_peak_rss_mib"`
	Oversubscribed bool      `json:"oversubscribed"`
	SlowestRank    int       `json:"slowest_rank"`
	SlowestByMean  float64   `json:"slowest_over_mean"`
	// CellsSHA256 is the SHA-256 of the augmented cells (the output .bin);
	// DiffCells counts the new cells that one process did not make (0:
	// the same cells).
	CellsSHA256 string `json:"cells_sha256"`
	DiffCells   int    `json:"cells_not_in_one_process"`
}

// parseRanks reads "1,2,4".
func parseRanks(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			return nil, fmt.Errorf("%q: want rank counts such as 1,2,4", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// fileSHA256 returns the hex SHA-256 of the file at path, or "".
func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// diffCells counts the cells of the .bin file b that the .bin file a does
// not hold (-1 when either cannot be read).
func diffCells(a, b string) int {
	x, err := tensor.ReadFile(a, tensor.ReadOptions{Format: tensor.BIN, IndexBase: -1})
	if err != nil {
		return -1
	}
	y, err := tensor.ReadFile(b, tensor.ReadOptions{Format: tensor.BIN, IndexBase: -1})
	if err != nil {
		return -1
	}
	set := tensor.NewCellSet(x.Dims, x.NNZ())
	for k := 0; k < x.NNZ(); k++ {
		set.Add(x.Cell(k))
	}
	n := 0
	for k := 0; k < y.NNZ(); k++ {
		if !set.Has(y.Cell(k)) {
			n++
		}
	}
	return n
}

// distRuns runs the tensor bin of n cells under each P of ranks with
// launcher (mpiexec), against one process's augmented cells at one.
func distRuns(launcher []string, dainx, bin string, n int, ranks []int, args []string, one string) []DistRun {
	var out []DistRun
	oneSHA := fileSHA256(one)
	for _, p := range ranks {
		d := DistRun{Ranks: p, Run: Run{Cells: n}}
		keep := filepath.Join(filepath.Dir(bin), fmt.Sprintf("dist-%s-n%d.bin", cellsName(n), p))
		l := append(append([]string(nil), launcher...), "-n", strconv.Itoa(p))
		_, rep := augmentWith(&d.Run, l, dainx, bin, append(append([]string(nil), args...), "-dist", "mpi"), keep)
		if rep != nil {
			var r struct {
				Dist struct {
					PerRank []struct {
						Peak float64 `json:"peak_rss_mib"`
					} `json:"per_rank"`
					Oversubscribed bool    `json:"oversubscribed"`
					Slowest        int     `json:"slowest_rank"`
					SlowestBy      float64 `json:"slowest_over_mean"`
				} `json:"dist"`
			}
			if err := json.Unmarshal(rep, &r); err == nil {
				d.MaxRSSMiB = 0
				for _, pr := range r.Dist.PerRank {
					d.RankPeakMiB = append(d.RankPeakMiB, pr.Peak)
					d.MaxRSSMiB = max(d.MaxRSSMiB, pr.Peak)
				}
				d.BPerCell = d.MaxRSSMiB * (1 << 20) / float64(n)
				d.Oversubscribed, d.SlowestRank, d.SlowestByMean = r.Dist.Oversubscribed, r.Dist.Slowest, r.Dist.SlowestBy
			}
			d.CellsSHA256 = fileSHA256(keep)
			d.DiffCells = 0
			if d.CellsSHA256 != oneSHA {
				d.DiffCells = diffCells(one, keep)
			}
		}
		os.Remove(keep)
		logf("%d cells, -n %d: largest rank peak %.0f MiB, %d new cells not one process's", n, p, d.MaxRSSMiB, d.DiffCells)
		out = append(out, d)
	}
	return out
}

// fitRSS fits the largest rank's peak RSS (bytes) of the runs to
// a + b·cells/P + c·cells by least squares, and returns a (MiB), b and c
// (bytes per cell), or ok false with fewer than three runs or a singular
// system.
func fitRSS(runs []DistRun) (a, b, c float64, ok bool) {
	var m [3][4]float64
	k := 0
	for _, r := range runs {
		if r.Error != "" || r.MaxRSSMiB <= 0 {
			continue
		}
		x := [3]float64{1, float64(r.Cells) / float64(r.Ranks), float64(r.Cells)}
		y := r.MaxRSSMiB * (1 << 20)
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				m[i][j] += x[i] * x[j]
			}
			m[i][3] += x[i] * y
		}
		k++
	}
	if k < 3 {
		return 0, 0, 0, false
	}
	// Gauss–Jordan with partial pivoting on the normal equations.
	for col := 0; col < 3; col++ {
		piv := col
		for r := col + 1; r < 3; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[piv][col]) {
				piv = r
			}
		}
		m[col], m[piv] = m[piv], m[col]
		if math.Abs(m[col][col]) < 1e-12*math.Abs(m[0][0]) {
			return 0, 0, 0, false
		}
		for r := 0; r < 3; r++ {
			if r == col {
				continue
			}
			f := m[r][col] / m[col][col]
			for j := col; j < 4; j++ {
				m[r][j] -= f * m[col][j]
			}
		}
	}
	return m[0][3] / m[0][0] / (1 << 20), m[1][3] / m[1][1], m[2][3] / m[2][2], true
}

// distMarkdown renders the distributed runs.
func distMarkdown(p func(string, ...any), r *Results) {
	if len(r.Dist) == 0 {
		return
	}
	p("## Spread over MPI ranks")
	p("")
	p("`%s -n P dainx augment -dist mpi %s` on each size's .bin, against the one-process run above. A rank's peak RSS is its ru_maxrss, as the report's `dist.per_rank` gives it; runs with more ranks than the machine has CPUs are oversubscribed: their times measure memory, not speed.", strings.Join(r.Launcher, " "), strings.Join(append(append([]string(nil), r.Args...), r.DistArgs...), " "))
	p("")
	p("| cells | P | largest rank peak | ranks' peaks | vs one process | seconds | slowest rank | split = one process's | new cells not one process's | RMSE before → after | oversubscribed |")
	p("|---:|---:|---:|---|---:|---:|---|---|---:|---|---|")
	oneRSS, oneSplit := map[int]float64{}, map[int]string{}
	for _, run := range r.Runs {
		oneRSS[run.Cells], oneSplit[run.Cells] = run.MaxRSSMiB, run.Split
	}
	for _, d := range r.Dist {
		if d.Error != "" {
			p("| %s | %d | | | | | | | | %s | |", cellsName(d.Cells), d.Ranks, oneLine(d.Error))
			continue
		}
		var peaks []string
		for _, v := range d.RankPeakMiB {
			peaks = append(peaks, fmt.Sprintf("%.0f", v))
		}
		ratio := ""
		if o := oneRSS[d.Cells]; o > 0 {
			ratio = fmt.Sprintf("%.2f×", d.MaxRSSMiB/o)
		}
		same := "no record"
		if o := oneSplit[d.Cells]; o != "" && d.Split != "" {
			same = map[bool]string{true: "yes", false: "**no**"}[o == d.Split]
		}
		p("| %s | %d | %s | %s MiB | %s | %.1f | %d (%.2f× mean) | %s | %d | %.4f → %.4f | %v |", cellsName(d.Cells), d.Ranks, mib(d.MaxRSSMiB), strings.Join(peaks, ", "), ratio,
			d.Seconds["total"], d.SlowestRank, d.SlowestByMean, same, d.DiffCells, d.RMSE[0], d.RMSE[1], d.Oversubscribed)
	}
	p("")
	if a, b, c, ok := fitRSS(r.Dist); ok {
		p("Fit of the largest rank's peak RSS: %.0f MiB + %.1f B × cells/P + %.1f B × cells.", a, b, c)
	} else {
		p("Too few runs to fit the largest rank's peak RSS to a + b·cells/P + c·cells.")
	}
	p("")
}
