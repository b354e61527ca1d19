package compute

// Graph is a recorded sequence of a backend's queued operations, made by
// Capturer.Capture, that Launch replays on the buffers' current contents.
type Graph interface {
	// Launch queues one replay, ordered after the operations queued before
	// it and before those queued after it. Failures become the backend's
	// sticky error. It panics after Free.
	Launch()
	// Free releases the graph once its queued replays are done. Freeing
	// twice does nothing.
	Free()
}

// Capturer is implemented by backends that can record queued operations into
// a Graph (the CUDA backend: CUDA graphs). A training step captured once and
// launched every epoch costs one driver call instead of one per operation.
type Capturer interface {
	// Capture runs f, recording the operations it queues instead of running
	// them, and returns the Graph. The operations' arguments (buffers by
	// address, sizes, scalars) are frozen. f must only queue operations:
	// Alloc, Upload, Download and Sync panic during Capture. Run f's
	// operations once eagerly before capturing them, so that scratch memory
	// is sized. It returns the sticky error, or an error when the device
	// cannot capture.
	Capture(f func()) (Graph, error)
}
