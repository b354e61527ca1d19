package cuda

import "fmt"

// OnStream runs f on the backend's context thread (the device's primary
// context current) with the handle of the backend's stream, for libraries
// that queue their own work on it, such as NCCL's collectives: what f
// queues is ordered after the backend's operations queued before and
// before those queued after. An error f returns becomes the backend's
// sticky error and is returned.
func (be *Backend) OnStream(f func(stream uintptr) error) error {
	var err error
	be.do(func() {
		if be.err != nil {
			err = be.err
			return
		}
		if err = f(be.stream.Handle()); err != nil {
			be.fail("OnStream", err)
		}
	})
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	return nil
}

// OnContext is OnStream for set-up calls a caller can recover from (NCCL's
// communicator set-up, which falls back to host memory when it fails): an
// error f returns is returned only, and the backend stays usable. A sticky
// error from earlier work is returned without running f.
func (be *Backend) OnContext(f func(stream uintptr) error) error {
	var err error
	be.do(func() {
		if be.err != nil {
			err = be.err
			return
		}
		err = f(be.stream.Handle())
	})
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	return nil
}
