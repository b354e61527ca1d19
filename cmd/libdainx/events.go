package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"sync"
	"time"

	"github.com/dainx/dainx/dain"
	"github.com/dainx/dainx/tensor"
)

// tickEvery is the period of "tick" events (dainx.h, dainx_progress).
const tickEvery = 250 * time.Millisecond

// event is one progress event of dainx_augment_progress (dainx.h).
type event struct {
	Event    string   `json:"event"` // epoch, log, tick
	Stage    string   `json:"stage,omitempty"`
	Model    string   `json:"model,omitempty"`
	Epoch    int      `json:"epoch,omitempty"`
	Epochs   int      `json:"epochs,omitempty"`
	TrainMSE *float64 `json:"train_mse,omitempty"` // absent when not finite
	ValMSE   *float64 `json:"val_mse,omitempty"`
	Best     *bool    `json:"best,omitempty"`
	Seconds  *float64 `json:"seconds,omitempty"`
	Elapsed  float64  `json:"elapsed"`
	Message  string   `json:"message,omitempty"`
}

// lineWriter turns what the pipeline writes to its progress writer into
// one "log" event per line.
type lineWriter struct {
	mu    sync.Mutex
	part  []byte
	start time.Time
	send  func(event)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		line := string(bytes.TrimRight(w.part[:i], "\r"))
		w.part = w.part[i+1:]
		if line != "" {
			w.send(event{Event: "log", Message: line, Elapsed: time.Since(w.start).Seconds()})
		}
	}
	return len(p), nil
}

// augmentEvents runs augment on t in a goroutine and, on the calling
// goroutine (so on the C caller's thread), hands every progress event to
// call as JSON, with a "tick" every tickEvery; call returning false
// cancels the run. It returns once the run has ended and every event has
// been delivered (or dropped after a cancel), so call is never used after
// it returns.
func augmentEvents(t *tensor.COO, options string, call func([]byte) bool) (*augmentResult, error) {
	var res *augmentResult
	err := runEvents(func(ctx context.Context, log io.Writer, send func(event)) error {
		var err error
		res, err = augment(ctx, t, options, log, func(e dain.EpochInfo) {
			send(epochEvent(e))
		})
		return err
	}, call)
	return res, err
}

// runEvents runs work in a goroutine (under safely) and, on the calling
// goroutine, hands every progress event to call as JSON: the lines work
// writes to log as "log" events, the events it sends, and a "tick" every
// tickEvery; call returning false cancels work's ctx. It returns work's
// error once work has ended and every event has been delivered (or
// dropped after a cancel), or a cancellation error when call asked to
// stop after work's last step.
func runEvents(work func(ctx context.Context, log io.Writer, send func(event)) error, call func([]byte) bool) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	events := make(chan event, 64)
	send := func(e event) {
		select {
		case events <- e:
		case <-ctx.Done(): // nobody listens to a cancelled run
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- safely(func() error {
			return work(ctx, &lineWriter{start: start, send: send}, send)
		})
	}()
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	deliver := func(e event) {
		if ctx.Err() != nil {
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			return
		}
		if !call(b) {
			cancel()
		}
	}
	for {
		select {
		case e := <-events:
			deliver(e)
		case <-tick.C:
			deliver(event{Event: "tick", Elapsed: time.Since(start).Seconds()})
		case err := <-done:
			for {
				select {
				case e := <-events:
					deliver(e)
					continue
				default:
				}
				break
			}
			if err == nil && ctx.Err() != nil {
				// Cancelled after the last step: the run is complete,
				// but the caller asked to stop; say so.
				return &libError{codeCancelled, "dainx: cancelled"}
			}
			return err
		}
	}
}

// epochEvent is the "epoch" event of e.
func epochEvent(e dain.EpochInfo) event {
	best := e.Best
	return event{Event: "epoch", Stage: e.Stage, Model: e.Model, Epoch: e.N, Epochs: e.Epochs,
		TrainMSE: finite(e.TrainMSE), ValMSE: finite(e.ValMSE), Best: &best, Seconds: finite(e.Seconds),
		Elapsed: e.Elapsed, Message: e.Line}
}

// finite is &x, or nil (JSON null: absent) for NaN and ±Inf, which JSON
// cannot hold.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
