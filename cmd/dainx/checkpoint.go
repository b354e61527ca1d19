package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/dain"
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

// run runs DAIN on t, checkpointed when -checkpoint is given. An
// interrupted checkpointed run says that -resume continues it.
func (c *checkpointFlags) run(ctx context.Context, t *tensor.COO, cfg dain.Config, be compute.Backend, input string) (*dain.Result, error) {
	if c.dir == "" {
		return dain.Run(ctx, t, cfg, be)
	}
	res, err := dain.RunCheckpointed(ctx, t, cfg, be, dain.Checkpoint{Dir: c.dir, Resume: c.resume, Input: input, Program: version(), Hook: checkpointHook})
	if err != nil && ctx.Err() != nil {
		return nil, &keptError{msg: fmt.Sprintf("nothing written but the checkpoint in %s, which keeps the last finished epoch; the same command with -resume continues the run", c.dir)}
	}
	return res, err
}
