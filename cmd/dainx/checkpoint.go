package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/eval"
	"github.com/dainx/dainx/tensor"
)

// checkpointFlags are -checkpoint and -resume of `dainx augment`
// (dain.Checkpoint says what is saved and when).
type checkpointFlags struct {
	dir    string
	resume bool
}

func bindCheckpoint(fs *flag.FlagSet) *checkpointFlags {
	c := &checkpointFlags{}
	fs.StringVar(&c.dir, "checkpoint", "", "save the run's state in this `directory` after every epoch of every training stage (atomically: a kill leaves whole files), so that -resume can continue it; refused if the directory already holds a checkpoint, unless -resume")
	fs.BoolVar(&c.resume, "resume", false, "continue the run saved in the -checkpoint directory from its last finished epoch; the input and every other flag must be those of that run (a difference is refused, named); with no checkpoint there yet, start from the beginning")
	return c
}

// check reports -resume without -checkpoint.
func (c *checkpointFlags) check() error {
	if c.resume && c.dir == "" {
		return fmt.Errorf("%w: -resume needs -checkpoint DIR, the directory of the run to continue", errUsage)
	}
	return nil
}

// checkpointHook, when not nil, is the dain.Checkpoint.Hook of every
// checkpointed run: tests stop a run with it at a chosen point.
var checkpointHook func(dain.CheckpointPoint) error

// run runs DAIN on the processes p, this one holding sh, checkpointed
// when -checkpoint is given. An interrupted checkpointed run says that
// -resume continues it.
func (c *checkpointFlags) run(ctx context.Context, p *procs, sh *tensor.Part, cfg dain.Config, be compute.Backend, input string) (*dain.Result, error) {
	if c.dir == "" {
		return dain.RunOn(ctx, p.cl, sh, cfg, be)
	}
	res, err := dain.RunOnCheckpointed(ctx, p.cl, sh, cfg, be, dain.Checkpoint{Dir: c.dir, Resume: c.resume, Input: input, Program: version(), Hook: checkpointHook})
	if err != nil && ctx.Err() != nil {
		return nil, &keptError{msg: c.interrupted(cfg.Keep, p.comm != nil)}
	}
	return res, err
}

// interrupted says what an interrupted checkpointed run left and exactly
// what to run next: the same command with -resume (under MPI, job, on as
// many ranks), or, when steps 1–4 had finished (their record is in the
// checkpoint) and the run was to keep what only they compute (keep:
// -scores-out, -importance-out, -model-out-all), which -resume cannot
// give, what to drop or remove.
func (c *checkpointFlags) interrupted(keep dain.Keep, job bool) string {
	kept, again := "the last finished epoch", "the same command with -resume"
	if job {
		kept, again = "the last epoch every rank finished", "the same command with -resume (and as many ranks)"
	}
	msg := fmt.Sprintf("nothing written but the checkpoint in %s, which keeps %s; %s continues the run", c.dir, kept, again)
	flags := keep.Steps14Flags()
	if len(flags) == 0 {
		return msg
	}
	steps14 := false
	for _, p := range []string{filepath.Join(c.dir, "augmented.ckpt"), filepath.Join(c.dir, "rank-0-of-*", "augmented.ckpt")} {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			steps14 = true
		}
	}
	if !steps14 {
		return msg
	}
	f := strings.Join(flags, ", ")
	return fmt.Sprintf("nothing written but the checkpoint in %s, which keeps %s; steps 1–4 had finished, and the checkpoint does not keep what %s writes: %s but without %s finishes the run; to have them, remove %s and run the same command without -resume", c.dir, kept, f, again, f, c.dir)
}

// adoptRecorded sets in c, for `dainx eval -resume` of the evaluation in
// dir, every setting that its record lacks (written by a dainx that
// predates the setting, eval.Provenance.Legacy) and that args does not
// give, to the value that evaluation was made with, and says so on
// stderr: a default that changed since (-split, -embedding-optimizer)
// does not stop old work from resuming. A missing or unreadable record
// is left to resumeFrom to report.
func adoptRecorded(dir string, c *dain.Config, args []string, stderr io.Writer) {
	_, p, err := eval.Load(dir)
	if err != nil {
		return
	}
	for _, s := range p.Adopt(c, func(flag string) bool { return flagGiven(args, flag) }) {
		fmt.Fprintf(stderr, "dainx eval: -resume: %s was made before dainx recorded %s; it resumes with the value it was made with, %s (give the flag to choose)\n", dir, strings.Fields(s)[0], s)
	}
}

// flagGiven reports whether args sets the flag named name ("-split"),
// as -name, --name, -name=v or --name=v.
func flagGiven(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		a = strings.TrimPrefix(a, "-")
		if k, _, _ := strings.Cut(a, "="); "-"+k == name {
			return true
		}
	}
	return false
}
