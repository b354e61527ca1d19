package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda/driver"
	"github.com/dainx/dainx/cuda/gemmtune"
	"github.com/dainx/dainx/kernels/ptx"
)

// The GEMM family of issue 24 at run time: each forward, dx and dw GEMM of
// the Linear layers runs on the variant of its precision class (SIMT tiles
// for fp32, tensor-core tiles for TF32 and 3xTF32; docs/gpu-tuning.md)
// that the tuner chose for its shape and split, at its first use:
//
//   - off (Options.GemmTune's zero value; dainx -gemm-tune, whose default
//     is $DAINX_GEMM_TUNE): the 64×64 kernels of before tuning;
//   - model: the analytic model's first choice (gemmtune.Rank);
//   - time: the model's three best that fit, timed on the device (a
//     warm-up, then the median of five launches between CUDA events) on
//     the call's own operands when the launch may be repeated (its outputs
//     overwritten, not accumulated), else the model's choice; the winner is
//     cached in os.UserCacheDir()/dainx/gemm-tune.json under the GPU, its
//     compute capability, SM count and driver, the family's PTX hash, the
//     shape, the split and the precision. Never during a graph capture
//     (the model's choice stands in, uncached).
//
// The variants of a class give the same bits (the emulator checks it in CI
// and TestGemmFamily on a GPU), and the split is fixed by the shape and the
// SM count, so the choice changes the speed only. Until a GPU run has
// verified the family (TestGemmFamily, TestGemmTuned), the default (the
// zero Options.GemmTune; dainx with DAINX_GEMM_TUNE unset) is off.
//
// Serial split-K (Options.SerialSplitK; dainx -gemm-serial, whose default
// is $DAINX_GEMM_SERIAL=1): with the tuner on (model or time), every split
// GEMM on a tile body runs as serial split-K (kernels/splitk.cuh). Off by
// default: on an H200 (2026-11-26) the serial forms were 2.3–3.6× slower
// than the parts and split_k_reduce on the default model's split shapes
// (the S blocks of a tile wait for each other's turn), which made the
// tuned TF32 step 427 µs against 315 µs with the 64×64 kernels.

// gemmTuner is a backend's choice of variants. Context thread.
type gemmTuner struct {
	mode   gemmtune.Mode
	dev    gemmtune.Device
	base   gemmtune.Key    // the device and kernel part of every key
	disk   *gemmtune.Cache // time mode
	chosen map[gemmtune.Shape]GEMMChoice
	order  []gemmtune.Shape // in order of first use
	ids    map[string]kernelID
	opted  map[kernelID]bool // dynamic shared memory limit raised
	spent  time.Duration     // timing
	// serial: split GEMMs on a tile body run as serial split-K
	// (Options.SerialSplitK with the tuner on; see serialSplit).
	serial bool
}

// GEMMChoice is the variant the backend runs a GEMM shape on, and why.
type GEMMChoice struct {
	Shape   gemmtune.Shape
	Variant string
	// How: "off" (the fixed choice), "model", "timed", "cached" (a timing
	// of an earlier process), "model (in a capture)" or "model (not
	// repeatable)".
	How    string
	Micros map[string]float64 // the timed variants' medians, µs
	// Serial: the split over k runs as serial split-K in one kernel
	// (kernels/splitk.cuh) instead of the parts and split_k_reduce.
	Serial bool
}

// newTuner makes the tuner of mode (Options.GemmTune) and serial
// (Options.SerialSplitK) and reads the device's properties. An unreadable
// cache file is not an error (tuning runs again).
func newTuner(drv *driver.Driver, dev driver.Device, sms int, mode gemmtune.Mode, serial bool) (*gemmTuner, error) {
	t := &gemmTuner{mode: mode, serial: serial, chosen: map[gemmtune.Shape]GEMMChoice{}, ids: map[string]kernelID{}, opted: map[kernelID]bool{}}
	for i, n := range kernelNames {
		t.ids[n] = kernelID(i)
	}
	if t.mode == gemmtune.Off {
		return t, nil
	}
	name, err := drv.DeviceName(dev)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	attr := func(a driver.Attribute) int {
		v, aerr := drv.DeviceAttribute(dev, a)
		if aerr != nil && err == nil {
			err = aerr
		}
		return v
	}
	d := gemmtune.Device{Name: name, SMs: sms,
		Major: attr(driver.AttrComputeCapabilityMajor), Minor: attr(driver.AttrComputeCapabilityMinor),
		SmemPerSM: attr(driver.AttrMaxSharedMemoryPerSM), SmemOptIn: attr(driver.AttrMaxSharedMemoryPerBlockIn),
		RegsPerSM: attr(driver.AttrMaxRegistersPerSM), ThreadsPerSM: attr(driver.AttrMaxThreadsPerSM),
		BlocksPerSM: attr(driver.AttrMaxBlocksPerSM), ClockKHz: attr(driver.AttrClockRate)}
	memKHz, bus := attr(driver.AttrMemoryClockRate), attr(driver.AttrGlobalMemoryBusWidth)
	d.MemGBs = 2 * float64(memKHz) * 1e3 * float64(bus) / 8 / 1e9 // double data rate
	if d.Driver, err = drv.Version(); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	t.dev = d
	t.base = gemmtune.Key{GPU: d.Name, Major: d.Major, Minor: d.Minor, SMs: d.SMs, Driver: d.Driver, PTX: familyPTXHash()}
	if t.mode == gemmtune.Time {
		path, perr := gemmtune.DefaultPath()
		if perr != nil {
			path = "" // no cache directory: results in memory only
		}
		t.disk, _ = gemmtune.Open(path)
	}
	return t, nil
}

// familyPTXHash returns the first 16 hex digits of the SHA-256 of the
// family's PTX, so that a cached choice is dropped when the kernels change.
func familyPTXHash() string {
	h := sha256.New()
	var names []string
	for _, p := range []compute.Precision{compute.FP32, compute.TF32} {
		for _, v := range gemmtune.Family(p) {
			for _, op := range []gemmtune.Op{gemmtune.Forward, gemmtune.DX, gemmtune.DW} {
				names = append(names, v.Kernel(op))
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		b, _ := ptx.FS.ReadFile(n + ".ptx")
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// gemmArgs adds a GEMM kernel's arguments, the same for every variant of
// its op, with part as its part argument and serial (0 or epiSerial) added
// to its flags.
type gemmArgs func(a *driver.Args, part driver.DevicePtr, serial int32)

// gemm launches the GEMM of op (an m×n output of k-term sums, split into
// parts of chunk) on the variant chosen for it. repeatable says that
// launching it more than once gives the same result (its output is
// overwritten, not accumulated, and no input). part is the caller's
// buffer for the parts (parts×m×pcols floats) when parts > 1.
//
// With the tuner on (Options.GemmTune model or time), serial split-K on
// (Options.SerialSplitK) and a variant that has it (every tile body of linear_tc.cuh and
// linear_simt.cuh: all but simt_64x64), a split GEMM is serial (kernels/splitk.cuh): one kernel
// that leaves the final output, with the bits the split and split_k_reduce
// give; gemm then returns serial = true and the caller must not reduce.
// Verified on an H200 (2026-11-26: bit for bit, and under memcheck and
// synccheck) but slower there, so off unless asked for. Context thread.
func (be *Backend) gemm(op gemmtune.Op, m, n, k, parts, pcols int, part driver.DevicePtr, repeatable bool, args gemmArgs) (serial bool, err error) {
	plain := func(a *driver.Args) { args(a, part, 0) }
	v, err := be.variant(op, m, n, k, parts, repeatable, plain)
	if err != nil {
		return false, err
	}
	if parts > 1 && be.serialSplit(v) {
		gx, gy := (m+v.BM-1)/v.BM, (n+v.BN-1)/v.BN
		if be.recording && !be.serialFits(gx*gy, int64(m)*int64(pcols)) {
			// The workspace cannot grow during a capture (its address is
			// recorded): run the split as parts and split_k_reduce, the
			// same bits, into the caller's part buffer.
			return false, be.launchVariant(v, op, m, n, parts, plain)
		}
		ws := be.serialBuf(gx*gy, int64(m)*int64(pcols))
		if ws == 0 {
			return true, nil // the error is recorded
		}
		return true, be.launchVariant(v, op, m, n, parts, func(a *driver.Args) { args(a, ws, epiSerial) })
	}
	return false, be.launchVariant(v, op, m, n, parts, plain)
}

// serialSplit reports whether a split GEMM on v is serial (see gemm):
// with the tuner on and serial split-K on (Options.SerialSplitK).
func (be *Backend) serialSplit(v gemmtune.Variant) bool {
	return be.tune.mode != gemmtune.Off && be.tune.serial && v.Name != "simt_64x64"
}

// launchVariant launches v's kernel of op with its grid, block and dynamic
// shared memory (raising the kernel's limit first where v needs more than
// 48 KiB). Context thread.
func (be *Backend) launchVariant(v gemmtune.Variant, op gemmtune.Op, m, n, parts int, args func(a *driver.Args)) error {
	id, err := be.optIn(v, op)
	if err != nil {
		return err
	}
	gy := (n + v.BN - 1) / v.BN
	if gy > maxGridYZ {
		return fmt.Errorf("%s: width %d exceeds the grid limit", v.Kernel(op), n)
	}
	grid := driver.Dim3{X: uint32((m + v.BM - 1) / v.BM), Y: uint32(gy), Z: uint32(parts)}
	a := be.args
	a.Reset()
	args(a)
	return be.launch(id, grid, driver.Dim3{X: uint32(v.Threads), Y: 1, Z: 1}, uint32(v.DynSmem), a)
}

// optIn returns v's kernel of op, its dynamic shared memory limit raised
// to v's (once) where v needs more than the 48 KiB default; an error when
// the kernel is missing or the device refuses. Context thread.
func (be *Backend) optIn(v gemmtune.Variant, op gemmtune.Op) (kernelID, error) {
	id, ok := be.tune.ids[v.Kernel(op)]
	if !ok {
		return 0, fmt.Errorf("no kernel %s", v.Kernel(op))
	}
	if v.DynSmem > 0 && !be.tune.opted[id] {
		if err := be.fns[id].SetAttribute(driver.FuncMaxDynamicSharedSizeBytes, v.DynSmem); err != nil {
			return 0, fmt.Errorf("%s: %d bytes of dynamic shared memory: %w", v.Kernel(op), v.DynSmem, err)
		}
		be.tune.opted[id] = true
	}
	return id, nil
}

// variant returns the variant of op's shape, choosing it at the first use
// (see the file's comment). Context thread.
func (be *Backend) variant(op gemmtune.Op, m, n, k, parts int, repeatable bool, args func(a *driver.Args)) (gemmtune.Variant, error) {
	t := be.tune
	s := gemmtune.Shape{Op: op, M: m, N: n, K: k, Parts: parts, Precision: be.prec}
	fam := gemmtune.Family(be.prec)
	if c, ok := t.chosen[s]; ok {
		v, _ := gemmtune.Lookup(be.prec, c.Variant)
		return v, nil
	}
	c := GEMMChoice{Shape: s, Variant: fam[0].Name, How: "off"}
	if t.mode != gemmtune.Off {
		ranked := gemmtune.Rank(t.dev, s)
		if ranked[0].Fits {
			c.Variant, c.How = ranked[0].Name, "model"
		}
		key := t.base
		key.Shape = s
		switch {
		case t.mode != gemmtune.Time:
		case be.recording:
			c.How = "model (in a capture)"
		default:
			if e, ok := t.disk.Get(key); ok {
				if _, known := gemmtune.Lookup(be.prec, e.Variant); known {
					c.Variant, c.How, c.Micros = e.Variant, "cached", e.Micros
					break
				}
			}
			if !repeatable {
				c.How = "model (not repeatable)"
				break
			}
			won, micros, err := be.timeVariants(ranked, op, m, n, parts, args)
			if err != nil {
				return gemmtune.Variant{}, err
			}
			c.Variant, c.How, c.Micros = won, "timed", micros
			_ = t.disk.Put(key, gemmtune.Entry{Variant: won, Micros: micros}) // kept in memory if the file cannot be written
		}
	}
	v, _ := gemmtune.Lookup(be.prec, c.Variant)
	c.Serial = parts > 1 && be.serialSplit(v)
	if !(be.recording && t.mode == gemmtune.Time) {
		t.chosen[s] = c
		t.order = append(t.order, s)
	}
	return v, nil
}

// timeVariants times the first three variants of ranked that fit on the
// call's operands: a warm-up launch, then five launches each between two
// events; it returns the variant of the least median and every median, µs.
// A variant that fails to launch (its shared memory refused) is left out.
// Context thread.
func (be *Backend) timeVariants(ranked []gemmtune.Estimate, op gemmtune.Op, m, n, parts int, args func(a *driver.Args)) (string, map[string]float64, error) {
	t0 := time.Now()
	defer func() { be.tune.spent += time.Since(t0) }()
	start, err := be.ctx.NewEvent()
	if err != nil {
		return "", nil, err
	}
	defer start.Destroy()
	end, err := be.ctx.NewEvent()
	if err != nil {
		return "", nil, err
	}
	defer end.Destroy()
	micros := map[string]float64{}
	best, bestT := ranked[0].Name, 0.0
	tried := 0
	for _, e := range ranked {
		if !e.Fits || tried == 3 {
			continue
		}
		tried++
		if err := be.launchVariant(e.Variant, op, m, n, parts, args); err != nil {
			continue
		}
		var ts []float64
		for range 5 {
			if err := start.Record(be.stream); err != nil {
				return "", nil, err
			}
			if err := be.launchVariant(e.Variant, op, m, n, parts, args); err != nil {
				return "", nil, err
			}
			if err := end.Record(be.stream); err != nil {
				return "", nil, err
			}
			if err := end.Synchronize(); err != nil {
				return "", nil, err
			}
			ms, err := driver.Elapsed(start, end)
			if err != nil {
				return "", nil, err
			}
			ts = append(ts, 1000*float64(ms))
		}
		slices.Sort(ts)
		med := ts[len(ts)/2]
		micros[e.Name] = med
		if len(micros) == 1 || med < bestT {
			best, bestT = e.Name, med
		}
	}
	return best, micros, nil
}

// GEMMChoices returns the variant every GEMM shape met so far runs on, in
// order of first use, and the time spent timing variants (-gemm-tune,
// `dainx tune`, `make bench`).
func (be *Backend) GEMMChoices() ([]GEMMChoice, time.Duration) {
	var out []GEMMChoice
	var spent time.Duration
	be.do(func() {
		for _, s := range be.tune.order {
			out = append(out, be.tune.chosen[s])
		}
		spent = be.tune.spent
	})
	return out, spent
}
