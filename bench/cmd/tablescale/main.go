// Command tablescale measures how dainx reads large CSV tables (issue 34:
// "100M rows in bounded memory"): for each size it generates a CSV of
// ratings by string user IDs, integer item IDs and ISO 8601 times (cached
// in -data, git-ignored), runs `dainx convert -input FILE -index
// user,item,time:day -value rating -output X.bin` and records its seconds
// and peak RSS (the child's getrusage maximum) against the bytes the cells
// themselves need (N × (4·order + 8)); with -pipe it also reads the same
// rows generated on the fly through a pipe (-input /dev/stdin: the size is
// not known ahead). `make bench-scale` runs it for 10M and 100M rows; the
// results go to -out as tables-scale-DATE.{json,md}.
//
// Every row's (user, item) pair is distinct (a bijection of the row
// number), so the table is a valid tensor: 200 000 users, N / 200 000
// items, 731 days.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Run is one read of a table.
type Run struct {
	Rows        int     `json:"rows"`
	Source      string  `json:"source"` // "file" or "pipe"
	Bytes       int64   `json:"bytes"`  // the CSV's size
	Seconds     float64 `json:"seconds"`
	MBps        float64 `json:"mb_per_s"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	CellsMiB    float64 `json:"cells_mib"` // N × (4·3 + 8) bytes
	RSSPerCell  float64 `json:"rss_bytes_per_cell"`
	Summary     string  `json:"summary"` // dainx convert's line
	Command     string  `json:"command"`
	Users       int     `json:"users"`
	Items       int     `json:"items"`
	GenerateSec float64 `json:"generate_seconds,omitempty"`
}

const users = 200000

func main() {
	var (
		rowsF = flag.String("rows", "10M,100M", "comma-separated `rows` of each table (K, M suffixes)")
		dainx = flag.String("dainx", "./dainx", "the dainx `binary`")
		data  = flag.String("data", "bench/scale-data", "cache `directory` of the generated tables")
		out   = flag.String("out", "bench/results", "results `directory`")
		pipe  = flag.Bool("pipe", true, "also read each size generated on the fly through a pipe")
		file  = flag.Bool("file", true, "read each size from its cached file")
		gen   = flag.Int("generate", -1, "internal: write this many `rows` of the table to standard output")
		name  = flag.String("name", "tables-scale", "results file `prefix`: NAME-DATE.{json,md}")
	)
	flag.Parse()
	if *gen >= 0 {
		w := bufio.NewWriterSize(os.Stdout, 1<<20)
		if err := generate(w, *gen); err != nil {
			os.Exit(1)
		}
		w.Flush()
		return
	}
	var runs []Run
	for _, s := range strings.Split(*rowsF, ",") {
		n, err := parseCount(s)
		if err != nil {
			fatalf("-rows %q: %v", s, err)
		}
		if *file {
			path := filepath.Join(*data, fmt.Sprintf("table-%s.csv", strings.TrimSpace(s)))
			genSec := 0.0
			if _, err := os.Stat(path); err != nil {
				if err := os.MkdirAll(*data, 0o755); err != nil {
					fatalf("%v", err)
				}
				t0 := time.Now()
				f, err := os.Create(path + ".tmp")
				if err != nil {
					fatalf("%v", err)
				}
				w := bufio.NewWriterSize(f, 1<<20)
				if err := generate(w, n); err != nil {
					fatalf("%v", err)
				}
				if err := w.Flush(); err != nil {
					fatalf("%v", err)
				}
				f.Close()
				os.Rename(path+".tmp", path)
				genSec = time.Since(t0).Seconds()
			}
			r := convert(*dainx, path, nil, n)
			r.GenerateSec = genSec
			runs = append(runs, r)
			logf("%s", r.Summary)
		}
		if *pipe {
			self, _ := os.Executable()
			g := exec.Command(self, "-generate", strconv.Itoa(n))
			stdout, err := g.StdoutPipe()
			if err != nil {
				fatalf("%v", err)
			}
			if err := g.Start(); err != nil {
				fatalf("%v", err)
			}
			r := convert(*dainx, "/dev/stdin", stdout, n)
			g.Wait()
			runs = append(runs, r)
			logf("%s", r.Summary)
		}
	}
	date := time.Now().UTC().Format("2006-01-02T1504")
	js, _ := json.MarshalIndent(map[string]any{"machine": machine(), "commit": gitCommit(), "date": date, "runs": runs}, "", "  ")
	base := filepath.Join(*out, *name+"-"+date)
	os.WriteFile(base+".json", append(js, '\n'), 0o644)
	os.WriteFile(base+".md", []byte(markdown(runs, date)), 0o644)
	fmt.Println(markdown(runs, date))
}

// generate writes the header and n rows.
func generate(w io.Writer, n int) error {
	if _, err := io.WriteString(w, "user,item,time,rating\n"); err != nil {
		return err
	}
	start := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	// h = (a·k) mod n is a bijection of 0…n−1 for a prime a not dividing
	// n: every (user, item) = (h mod users, h / users) once.
	a := uint64(1000003)
	buf := make([]byte, 0, 64)
	for k := 0; k < n; k++ {
		h := int((a * uint64(k)) % uint64(n))
		x := uint64(k)*0x9E3779B97F4A7C15 + 1
		x ^= x >> 29
		t := time.Unix(start+int64(x%(731*86400)), 0).UTC()
		buf = append(buf[:0], "user-"...)
		buf = strconv.AppendInt(buf, int64(h%users), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(h/users)*37+1000, 10)
		buf = append(buf, ',')
		buf = t.AppendFormat(buf, time.RFC3339)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(1+x>>40%5), 10)
		buf = append(buf, ".5\n"...)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// convert runs dainx convert on input (stdin, when not nil, feeds it).
func convert(dainx, input string, stdin io.Reader, n int) Run {
	dir, err := os.MkdirTemp("", "tablescale-")
	if err != nil {
		fatalf("%v", err)
	}
	defer os.RemoveAll(dir)
	args := []string{"convert", "-input", input, "-index", "user,item,time:day", "-value", "rating", "-output", filepath.Join(dir, "t.bin")}
	if stdin != nil {
		args = append(args, "-format", "csv")
	}
	cmd := exec.Command(dainx, args...)
	cmd.Stdin = stdin
	cmd.Stderr = os.Stderr
	t0 := time.Now()
	outb, err := cmd.Output()
	sec := time.Since(t0).Seconds()
	if err != nil {
		fatalf("dainx %s: %v", strings.Join(args, " "), err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r := Run{Rows: n, Source: "file", Seconds: sec, PeakRSSMiB: float64(ru.Maxrss) / 1024, Users: min(n, users), Items: (n + users - 1) / users,
		Summary: strings.TrimSpace(string(outb)), Command: "dainx " + strings.Join(args, " ")}
	if stdin != nil {
		r.Source = "pipe"
	} else if st, err := os.Stat(input); err == nil {
		r.Bytes = st.Size()
		r.MBps = float64(r.Bytes) / 1e6 / sec
	}
	r.CellsMiB = float64(n) * (4*3 + 8) / (1 << 20)
	r.RSSPerCell = r.PeakRSSMiB * (1 << 20) / float64(n)
	return r
}

func markdown(runs []Run, date string) string {
	var b strings.Builder
	m := machine()
	fmt.Fprintf(&b, "# Reading large CSV tables (dainx convert -index)\n\n%s UTC, commit %s; machine: %s. Each run: `dainx convert -input TABLE -index user,item,time:day -value rating -output t.bin` on a generated CSV (`go run ./bench/cmd/tablescale`): string user IDs (200 000), integer item IDs, ISO 8601 times over 731 days, one decimal rating. \"pipe\" reads the same rows generated on the fly through standard input (size unknown ahead). Peak RSS is the child's getrusage maximum; the cells alone take N × 20 bytes (3 int32 indices and a float64 value).\n\n", date, gitCommit(), m)
	b.WriteString("| rows | source | CSV MB | seconds | MB/s | peak RSS (MiB) | cells (MiB) | RSS bytes per row |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		mb := "—"
		rate := "—"
		if r.Bytes > 0 {
			mb = fmt.Sprintf("%.0f", float64(r.Bytes)/1e6)
			rate = fmt.Sprintf("%.0f", r.MBps)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f | %s | %.0f | %.0f | %.1f |\n", r.Rows, r.Source, mb, r.Seconds, rate, r.PeakRSSMiB, r.CellsMiB, r.RSSPerCell)
	}
	return b.String()
}

func parseCount(s string) (int, error) {
	s = strings.TrimSpace(s)
	mul := 1
	switch {
	case strings.HasSuffix(s, "M"):
		mul, s = 1000000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mul, s = 1000, strings.TrimSuffix(s, "K")
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("want a positive count such as 10M")
	}
	return v * mul, nil
}

func machine() string {
	cpu := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %.1f GiB", float64(kb)/(1<<20))
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load average " + strings.Join(strings.Fields(string(b))[:3], " ") + " at the end"
	}
	return fmt.Sprintf("%s, %d cores%s%s", cpu, runtime.NumCPU(), mem, load)
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, "tablescale: "+format+"\n", a...) }

func fatalf(format string, a ...any) {
	logf(format, a...)
	os.Exit(1)
}
