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

// OutputMSE is implemented by backends that fuse DAIN's output layer (a
// Linear layer with one output) with the MSE loss (the CUDA backend: one
// kernel instead of two per training step; the CPU backend: the two
// operations in turn). nn uses it for a network whose last layer has one
// output.
type OutputMSE interface {
	// LinearForwardMSE computes the output layer and the gradient and
	// squared error of the MSE loss at it:
	//
	//	pred[b]  = φ(Σᵢ x[b,i]·w[i] + bias[0]),  φ = ReLU or identity  (=)
	//	delta[b] = scale·(pred[b] − y[b])                               (=)
	//	sq[0]    = Σ_b (pred[b] − y[b])²                                 (=)
	//
	// with x B×in, w in, bias 1, pred, delta, y B; sq has length 1 and may
	// be nil. It is LinearForward(pred, x, w, bias, in, 1, relu) followed
	// by MSEGrad(delta, sq, pred, y, scale): pred and delta bit for bit as
	// those two give on the same backend, sq summed in float64 in a fixed
	// order of its own (within one float32 rounding of MSEGrad's). It
	// panics as those two do. DAIN eq. 4 and the gradient of eq. 1.
	LinearForwardMSE(pred, delta, sq, x, w, bias, y F32, in int, relu bool, scale float32)
}
