package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/dainx/dainx/cuda"
	"github.com/dainx/dainx/mpi"
)

// The environment variables of the library packages' settings, which the
// commands (dainx, libdainx) read here, at the edge, and pass down as
// options: the packages below read none (TestLibrariesReadNoEnvironment).
// docs/environment.md lists every variable any command reads.
const (
	// EnvDevice is -device's default (cuda.Options.Device).
	EnvDevice = "DAINX_DEVICE"
	// EnvGemmTune is -gemm-tune's default (cuda.Options.GemmTune).
	EnvGemmTune = "DAINX_GEMM_TUNE"
	// EnvGemmSerial, 1, makes -gemm-serial's default on
	// (cuda.Options.SerialSplitK).
	EnvGemmSerial = "DAINX_GEMM_SERIAL"
	// EnvCUDASync, 1, makes the CUDA backend wait for, and check, every
	// launch (cuda.Options.Sync; no flag: a debugging switch).
	EnvCUDASync = "DAINX_CUDA_SYNC"
	// EnvLibCUDA names the CUDA driver library to try first
	// (cuda.Options.Library).
	EnvLibCUDA = "DAINX_LIBCUDA"
	// EnvCUDAGraphs, 0, makes -graphs' default off (GraphsDefault).
	EnvCUDAGraphs = "DAINX_CUDA_GRAPHS"
	// EnvVerbose, 1, lists the paths tried in -backend auto's "no CUDA
	// driver" note.
	EnvVerbose = "DAINX_VERBOSE"
	// EnvLibMPI names the MPI library -dist mpi loads (mpi.Options.Library).
	EnvLibMPI = "DAINX_LIBMPI"
	// EnvMPIYield, 1 or 0, turns the yielding collectives on or off
	// whatever the node's load (mpi.Options.Yield).
	EnvMPIYield = "DAINX_MPI_YIELD"
	// EnvMPIWait, sleep, makes the yielding collectives sleep between
	// tests instead of sched_yield (mpi.Options.SleepWait).
	EnvMPIWait = "DAINX_MPI_WAIT"
	// EnvNCCL, 1, makes augment's -nccl default on (NCCLDefault).
	EnvNCCL = "DAINX_NCCL"
)

// DeviceFromEnv returns the device ordinal $DAINX_DEVICE names, 0 when it
// is unset or empty, or an error when it is not a non-negative integer.
func DeviceFromEnv() (int, error) {
	s := os.Getenv(EnvDevice)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a device ordinal (0, 1, …)", EnvDevice, s)
	}
	return n, nil
}

// GemmTuneFromEnv returns the tuning $DAINX_GEMM_TUNE sets: off when it is
// unset or empty, an error naming the variable when it is not off, model
// or time.
func GemmTuneFromEnv() (cuda.GemmTune, error) {
	v := os.Getenv(EnvGemmTune)
	if v == "" {
		return cuda.GemmTuneOff, nil
	}
	t, err := cuda.ParseGemmTune(v)
	if err != nil {
		return cuda.GemmTuneOff, fmt.Errorf("%s=%q: want off, model or time", EnvGemmTune, v)
	}
	return t, nil
}

// GemmSerialFromEnv reports whether $DAINX_GEMM_SERIAL asks for serial
// split-K: on when it is 1, else off.
func GemmSerialFromEnv() bool { return os.Getenv(EnvGemmSerial) == "1" }

// CUDAEnvOptions returns the options of the CUDA backend that the
// environment alone sets ($DAINX_CUDA_SYNC=1, $DAINX_LIBCUDA), for a
// caller that fills the rest itself (CUDAOptions, dainx tune, the device
// count of -dist mpi).
func CUDAEnvOptions() cuda.Options {
	return cuda.Options{Sync: os.Getenv(EnvCUDASync) == "1", Library: os.Getenv(EnvLibCUDA)}
}

// MPIOptions returns the options of mpi.Init that the environment sets:
// $DAINX_LIBMPI, $DAINX_MPI_YIELD (1 on, 0 off, else by the node's load),
// $DAINX_MPI_WAIT (sleep), and os.Getenv for the launcher's variables.
func MPIOptions() mpi.Options {
	o := mpi.Options{Library: os.Getenv(EnvLibMPI), Getenv: os.Getenv, SleepWait: os.Getenv(EnvMPIWait) == "sleep"}
	switch os.Getenv(EnvMPIYield) {
	case "1":
		o.Yield = mpi.YieldOn
	case "0":
		o.Yield = mpi.YieldOff
	}
	return o
}

// NCCLDefault is whether NCCL is on when augment's command line does not
// say (-nccl): $DAINX_NCCL = 1.
func NCCLDefault() bool { return os.Getenv(EnvNCCL) == "1" }
