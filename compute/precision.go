package compute

import "fmt"

// Precision says how a backend multiplies the float32 matrices of its Linear
// layers (LinearForward, LinearBackward, InfluenceDot). Every other
// operation is float32 in all modes.
type Precision int

const (
	// FP32 multiplies and accumulates in float32: unit roundoff 2⁻²⁴. The
	// default, and the only mode of the CPU backend.
	FP32 Precision = iota
	// TF32 rounds each operand to TF32 (10 explicit mantissa bits, unit
	// roundoff 2⁻¹¹) and accumulates in float32, on tensor cores (PTX
	// mma.sync m16n8k8 .tf32; compute capability 8.0 and later).
	TF32
	// TF32x3 splits each operand a into a TF32 high part h = tf32(a) and
	// a low part l = tf32(a − h) and forms h·h' + h·l' + l·h' on tensor
	// cores: about float32 accuracy (the dropped l·l' term is below 2⁻²²
	// of the product) at three tensor-core products per product.
	TF32x3
)

// String returns "fp32", "tf32" or "3xtf32", the names ParsePrecision takes.
func (p Precision) String() string {
	switch p {
	case FP32:
		return "fp32"
	case TF32:
		return "tf32"
	case TF32x3:
		return "3xtf32"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision returns the precision named s: "fp32", "tf32" or "3xtf32".
func ParsePrecision(s string) (Precision, error) {
	for _, p := range []Precision{FP32, TF32, TF32x3} {
		if p.String() == s {
			return p, nil
		}
	}
	return FP32, fmt.Errorf("precision %q: want fp32, tf32 or 3xtf32", s)
}

// UnitRoundoff returns the unit roundoff u of the products of mode p: 2⁻²⁴
// for FP32 and TF32x3 (whose split keeps about 22 bits of each product, and
// which the conformance suite holds to 4u), 2⁻¹¹ for TF32.
func (p Precision) UnitRoundoff() float64 {
	if p == TF32 {
		return 1.0 / (1 << 11)
	}
	return 1.0 / (1 << 24)
}
