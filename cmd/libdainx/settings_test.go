package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/dain"
)

// TestGraphsOption: the options "graphs" and "gemm-tune" are the flags'
// (the same names, defaults and checks as dainx augment's, Python's graphs
// and gemm_tune keywords): they reach the configuration, "graphs" the
// report, and a bad value is an input error naming the option.
func TestGraphsOption(t *testing.T) {
	t.Setenv("DAINX_CUDA_GRAPHS", "")
	t.Setenv("DAINX_GEMM_TUNE", "")
	fs := flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	a := cli.NewAugment(fs)
	if a.Config.Graphs != dain.GraphsOn || a.In.GemmTune != "off" {
		t.Errorf("defaults: graphs %q, gemm-tune %q; want on and off", a.Config.Graphs, a.In.GemmTune)
	}
	if err := setOptions(fs, `{"graphs":"off","gemm-tune":"model"}`, augmentSkip); err != nil || a.Config.Graphs != dain.GraphsOff || a.In.GemmTune != "model" {
		t.Errorf("graphs off, gemm-tune model: graphs %q, gemm-tune %q, %v", a.Config.Graphs, a.In.GemmTune, err)
	}
	fs = flag.NewFlagSet("dainx augment", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cli.NewAugment(fs)
	if err := setOptions(fs, `{"graphs":"maybe"}`, augmentSkip); err == nil || codeOf(err) != codeInput || !strings.Contains(err.Error(), `option "graphs": invalid value "maybe": want on or off`) {
		t.Errorf(`graphs "maybe": %v`, err)
	}

	x, err := buildTensor(libCells(400))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ options, want string }{
		{`{"layers":"12,8","epochs":1,"backend":"cpu","quiet":true}`, "on"},
		{`{"layers":"12,8","epochs":1,"backend":"cpu","quiet":true,"graphs":"off"}`, "off"},
	} {
		r, err := augment(context.Background(), x, c.options, io.Discard, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.options, err)
		}
		var rep struct{ Graphs string }
		if err := json.Unmarshal(r.report, &rep); err != nil || rep.Graphs != c.want {
			t.Errorf("%s: the report says graphs %q (%v), want %s", c.options, rep.Graphs, err, c.want)
		}
	}
	_, err = augment(context.Background(), x, `{"layers":"12,8","epochs":1,"backend":"cpu","quiet":true,"gemm-tune":"fast"}`, io.Discard, nil)
	if err == nil || codeOf(err) != codeInput || !strings.Contains(err.Error(), `-gemm-tune "fast"`) {
		t.Errorf(`gemm-tune "fast": %v`, err)
	}
}

// TestMaxMemoryOption (issue 46): the option "max-memory" is the flag's
// (Python's max_memory keyword): a size as a string or a number of bytes;
// a run whose estimate exceeds it fails before training with the estimate
// and the flags of its largest part, and a bad size is an input error.
func TestMaxMemoryOption(t *testing.T) {
	x, err := buildTensor(libCells(400))
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []string{`"1MB"`, `1000000`} {
		_, err := augment(context.Background(), x, `{"layers":"12,8","epochs":1,"backend":"cpu","quiet":true,"rank":4096,"max-memory":`+limit+`}`, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "needs about") || !strings.Contains(err.Error(), "-rank 4096") || !strings.Contains(err.Error(), "-max-memory 977 KiB") {
			t.Errorf("max-memory %s: %v", limit, err)
		}
	}
	if _, err := augment(context.Background(), x, `{"layers":"12,8","epochs":1,"backend":"cpu","quiet":true,"max-memory":"1GiB"}`, io.Discard, nil); err != nil {
		t.Errorf("max-memory 1GiB: %v", err)
	}
	_, err = augment(context.Background(), x, `{"quiet":true,"max-memory":"much"}`, io.Discard, nil)
	if err == nil || codeOf(err) != codeInput || !strings.Contains(err.Error(), `option "max-memory": invalid value "much"`) {
		t.Errorf(`max-memory "much": %v`, err)
	}
}
