package driver

// Handle returns the CUstream, for libraries that queue work on it (NCCL
// takes it as a cudaStream_t, the same object).
func (s *Stream) Handle() uintptr { return s.h }
