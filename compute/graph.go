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

// HostBuffers is implemented by backends whose buffers are ordinary host
// memory (the CPU backend). A caller that keeps cells or values on the host
// anyway can then use its slice as the buffer instead of holding a second
// copy: on the CPU a training set would otherwise be held twice, once as
// the caller's slices and once as the "device" buffers.
type HostBuffers interface {
	// WrapF32 returns a buffer whose storage is s itself (no copy): a
	// write through either is seen through the other. Free on it does
	// nothing; s is released when neither is referenced.
	WrapF32(s []float32) F32
	// WrapI32 is WrapF32 for int32.
	WrapI32(s []int32) I32
}
