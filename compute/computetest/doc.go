// Package computetest is the conformance suite of compute.Backend: every
// backend must pass it, and it is the only place where a backend's numerics
// are compared with the float64 reference loops of package compute/ref.
//
// # Using it from a backend
//
// A backend's test file calls Run with a fresh backend:
//
//	func TestConformance(t *testing.T) { computetest.Run(t, cpu.New()) }
//
// A backend that needs hardware skips when it has none and closes what it
// opened; Run never calls Close:
//
//	func TestConformance(t *testing.T) {
//		be, err := cuda.New()
//		if err != nil {
//			t.Skipf("no CUDA device: %v", err)
//		}
//		defer be.Close()
//		computetest.Run(t, be)
//	}
//
// Run requires every operation to be bit-reproducible. A backend whose
// accumulating kernels use floating-point atomics calls RunWith and names
// those operations in Options.Nondeterministic; their values must still
// pass the tolerance check.
//
// # What is checked
//
// Run has one subtest per Backend method (Alloc, Gather, LinearBackward, …)
// plus Panics. Inside each, the operation runs over a sweep of shapes: batch
// 0, 1 and sizes around GPU block sizes (31, 32, 33, 255, 256, 257), Linear
// widths including 1 (the output layer) and non-multiples of 16, tensor
// orders 1 to 4, both layouts, and embedding tables small enough that one
// batch repeats rows many times. For every case the suite checks that
//
//   - the result agrees with the compute/ref loop run in float64 on the same
//     float32 inputs (inputs are drawn from rand.NewPCG(1, 1) and rounded to
//     float32 before either side sees them), within the tolerance of Close;
//     pure data movement (Gather, Copy, Upload, SampleAlias) must be exact;
//   - nothing outside the output is written: every buffer is a Slice view at
//     an odd offset in a larger buffer whose guard elements hold a NaN
//     pattern, which must survive bit for bit;
//   - read-only inputs are unchanged, bit for bit;
//   - = operations overwrite an output pre-filled with NaN, and += operations
//     start from a non-zero output and are applied twice, the second result
//     checked against the reference applied twice;
//   - running the case again from the same state gives bit-identical output;
//   - representative misuse (a length that does not match, a negative size,
//     a buffer of another backend) panics, as the compute package documents.
//
// After ten failed checks an operation's subtest stops, so that a broken
// kernel reports its first mismatches rather than thousands.
//
// # Tolerance
//
// See Close, CloseMag and Tolerance: an element passes when
// |got−want| ≤ atol + rtol·|want| with rtol = C·√K·2⁻²⁴ and atol = rtol·m,
// K being the length of the longest reduction feeding the element and m the
// size of the terms it sums: rms(want) for large outputs, and for the
// reductions of the suite the larger of rms(want) and the root mean square
// that the reference loop computes from the squares of the inputs.
//
// # Precision modes
//
// A backend that can multiply the matrices of its Linear layers in a
// reduced precision (compute.TF32, compute.TF32x3 on tensor cores) is run
// once per mode, naming the mode in Options.Precision:
//
//	computetest.RunWith(t, be, computetest.Options{Precision: compute.TF32})
//
// LinearForward, LinearBackward, LinearLarge and InfluenceDot are then held
// to the same formula with the unit roundoff u of the mode in place of
// float32's (LinearUnit, ToleranceUnit):
//
//	fp32    u = 2⁻²⁴    rtol = C·√K·2⁻²⁴
//	tf32    u = 2⁻¹¹    rtol = C·√K·2⁻¹¹ (each operand rounded to 10
//	                    mantissa bits: a product is off by up to 2u, and
//	                    K such errors of random sign add up like √K·u)
//	3xtf32  u = 4·2⁻²⁴  rtol = C·√K·2⁻²² (the split h + l of each operand
//	                    leaves up to 2⁻²² of it, and the l·l' term is
//	                    dropped)
//
// with atol = rtol·m as above. Every other operation, and every mode's
// determinism, guard and read-only checks, are as in FP32.
package computetest
