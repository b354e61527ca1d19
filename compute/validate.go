package compute

import (
	"fmt"
	"math"
)

// The arguments of every Backend operation are validated here, once, for
// every backend: each backend calls the Check function of an operation
// before it runs it. A Check function panics, with a message that starts
// "compute: <operation>:", when the arguments break the operation's
// documented shapes (a caller bug, see the package documentation), and
// otherwise returns the sizes the operation needs. Only checks that need
// the data (an embedding row outside its table) are left to the backends.

func bad(op, format string, args ...any) {
	panic(fmt.Sprintf("compute: %s: %s", op, fmt.Sprintf(format, args...)))
}

// CheckLen panics unless got == want; what names the buffer in the message.
func CheckLen(op, what string, got, want int) {
	if got != want {
		bad(op, "%s has %d elements, want %d", what, got, want)
	}
}

// length returns b.Len(), panicking if b is nil.
func length(op, what string, b interface{ Len() int }) int {
	if b == nil {
		bad(op, "nil %s", what)
	}
	return b.Len()
}

// optional returns b.Len(), or -1 if b is nil.
func optional(b interface{ Len() int }) int {
	if b == nil {
		return -1
	}
	return b.Len()
}

// CheckLayout panics unless l is ModeMajor or RankMajor.
func CheckLayout(op string, l Layout) {
	if l != ModeMajor && l != RankMajor {
		bad(op, "unknown layout %d", l)
	}
}

// CheckCopy validates Copy: dst and src non-nil, of equal lengths.
func CheckCopy(dst, src F32) {
	CheckLen("Copy", "dst", length("Copy", "dst", dst), length("Copy", "src", src))
}

// CheckCopyI32 validates CopyI32: equal lengths.
func CheckCopyI32(dst, src I32) {
	CheckLen("CopyI32", "dst", length("CopyI32", "dst", dst), length("CopyI32", "src", src))
}

// CheckGather validates Gather and ScatterRows (op names which): x (the
// batch matrix, dx for ScatterRows) B×(N·E), table R×E, cells B×N, order
// N ≥ 1, width E ≥ 1 and a known layout. It returns R, the table's rows.
func CheckGather(op string, x, table F32, cells I32, order, width int, layout Layout) (rows int) {
	xLen, tLen, cLen := length(op, "batch matrix", x), length(op, "table", table), length(op, "cells", cells)
	if order <= 0 || width <= 0 {
		bad(op, "order %d, width %d", order, width)
	}
	CheckLayout(op, layout)
	if cLen%order != 0 {
		bad(op, "cells of %d elements is not a multiple of order %d", cLen, order)
	}
	CheckLen(op, "batch matrix", xLen, cLen*width)
	if tLen%width != 0 {
		bad(op, "table of %d elements is not a multiple of width %d", tLen, width)
	}
	return tLen / width
}

// linear validates the shapes every Linear operation shares: in, out ≥ 1,
// x B×in, w out×in. It returns B.
func linear(op string, x, w F32, in, out int, wName string) int {
	xLen, wLen := length(op, "x", x), length(op, wName, w)
	if in <= 0 || out <= 0 {
		bad(op, "in %d, out %d", in, out)
	}
	if xLen%in != 0 {
		bad(op, "x of %d elements is not a multiple of in %d", xLen, in)
	}
	CheckLen(op, wName, wLen, out*in)
	return xLen / in
}

// CheckLinearForward validates LinearForward: x B×in, w out×in, bias out,
// y B×out, in, out ≥ 1. It returns B.
func CheckLinearForward(y, x, w, bias F32, in, out int) (batch int) {
	const op = "LinearForward"
	batch = linear(op, x, w, in, out, "w")
	CheckLen(op, "y", length(op, "y", y), batch*out)
	CheckLen(op, "bias", length(op, "bias", bias), out)
	return batch
}

// CheckLinearBackward validates LinearBackward: x B×in, w out×in, dy
// B×out, and, when not nil, dx B×in, dw out×in, db out. It returns B.
func CheckLinearBackward(dx, dw, db, dy, x, w F32, in, out int) (batch int) {
	const op = "LinearBackward"
	batch = linear(op, x, w, in, out, "w")
	CheckLen(op, "dy", length(op, "dy", dy), batch*out)
	if n := optional(dx); n >= 0 {
		CheckLen(op, "dx", n, batch*in)
	}
	if n := optional(dw); n >= 0 {
		CheckLen(op, "dw", n, out*in)
	}
	if n := optional(db); n >= 0 {
		CheckLen(op, "db", n, out)
	}
	return batch
}

// CheckMSEGrad validates MSEGrad: delta, pred and y of one length, sq nil
// or of length 1.
func CheckMSEGrad(delta, sq, pred, y F32) {
	const op = "MSEGrad"
	n := length(op, "pred", pred)
	CheckLen(op, "delta", length(op, "delta", delta), n)
	CheckLen(op, "y", length(op, "y", y), n)
	if m := optional(sq); m >= 0 {
		CheckLen(op, "sq", m, 1)
	}
}

// CheckMul validates Mul: dst, a and b of one length. It returns it.
func CheckMul(dst, a, b F32) int {
	const op = "Mul"
	n := length(op, "dst", dst)
	CheckLen(op, "a", length(op, "a", a), n)
	CheckLen(op, "b", length(op, "b", b), n)
	return n
}

// CheckLinearForwardMSE validates OutputMSE.LinearForwardMSE: x B×in, w
// in, bias 1, pred, delta and y B, sq 1 or nil. It returns B.
func CheckLinearForwardMSE(pred, delta, sq, x, w, bias, y F32, in int) (batch int) {
	const op = "LinearForwardMSE"
	batch = linear(op, x, w, in, 1, "w")
	CheckLen(op, "pred", length(op, "pred", pred), batch)
	CheckLen(op, "bias", length(op, "bias", bias), 1)
	CheckLen(op, "delta", length(op, "delta", delta), batch)
	CheckLen(op, "y", length(op, "y", y), batch)
	if m := optional(sq); m >= 0 {
		CheckLen(op, "sq", m, 1)
	}
	return batch
}

// CheckAdam validates Adam: p, g, m and v of one length, step s.T ≥ 1
// and s.Scalars, when set, of 2 elements.
func CheckAdam(p, g, m, v F32, s AdamStep) {
	const op = "Adam"
	n := length(op, "p", p)
	CheckLen(op, "g", length(op, "g", g), n)
	CheckLen(op, "m", length(op, "m", m), n)
	CheckLen(op, "v", length(op, "v", v), n)
	checkAdamStep(op, s)
}

func checkAdamStep(op string, s AdamStep) {
	if s.T < 1 {
		bad(op, "step %d, want ≥ 1", s.T)
	}
	if !(s.L2 >= 0) || math.IsInf(s.L2, 1) {
		bad(op, "L2 %g, want finite and ≥ 0", s.L2)
	}
	if s.Scalars != nil {
		CheckLen(op, "Scalars", length(op, "Scalars", s.Scalars), 2)
	}
}

// CheckInfluenceDot validates InfluenceDot: x B×in, gw out×in, gb out, dy
// B×out, score B, in, out ≥ 1. It returns B.
func CheckInfluenceDot(score, dy, x, gw, gb F32, in, out int) (batch int) {
	const op = "InfluenceDot"
	batch = linear(op, x, gw, in, out, "gw")
	CheckLen(op, "score", length(op, "score", score), batch)
	CheckLen(op, "dy", length(op, "dy", dy), batch*out)
	CheckLen(op, "gb", length(op, "gb", gb), out)
	return batch
}

// CheckEmbeddingInfluence validates EmbeddingInfluence: score B, cells
// B×N, dx B×(N·E), gtable R×E, width E ≥ 1 and a known layout. It returns
// the order N and R; with B = 0, cells and dx must be empty and N is 0.
func CheckEmbeddingInfluence(score, dx F32, cells I32, gtable F32, width int, layout Layout) (order, rows int) {
	const op = "EmbeddingInfluence"
	sLen, cLen := length(op, "score", score), length(op, "cells", cells)
	CheckLayout(op, layout)
	if width <= 0 {
		bad(op, "width %d", width)
	}
	if sLen == 0 {
		CheckLen(op, "cells", cLen, 0)
		CheckLen(op, "dx", length(op, "dx", dx), 0)
		return 0, length(op, "gtable", gtable) / width
	}
	if cLen%sLen != 0 || cLen == 0 {
		bad(op, "cells of %d elements for %d scores", cLen, sLen)
	}
	order = cLen / sLen
	return order, CheckGather(op, dx, gtable, cells, order, width, layout)
}

// CheckEntityImportance validates EntityImportance: score T, cells T×N
// with N ≥ 1 (empty when T = 0), imp non-nil. It returns N (0 when T = 0).
func CheckEntityImportance(imp, score F32, cells I32) (order int) {
	const op = "EntityImportance"
	length(op, "imp", imp)
	sLen, cLen := length(op, "score", score), length(op, "cells", cells)
	if sLen == 0 {
		CheckLen(op, "cells", cLen, 0)
		return 0
	}
	if cLen%sLen != 0 || cLen == 0 {
		bad(op, "cells of %d elements for %d scores", cLen, sLen)
	}
	return cLen / sLen
}

// CheckSampleAlias validates SampleAlias: out M×order, 0 ≤ col < order, and
// thresh and alias of one non-zero length.
func CheckSampleAlias(out I32, order, col int, thresh, alias I32) {
	const op = "SampleAlias"
	oLen := length(op, "out", out)
	if order <= 0 || col < 0 || col >= order || oLen%order != 0 {
		bad(op, "out of %d elements, order %d, col %d", oLen, order, col)
	}
	tLen := length(op, "thresh", thresh)
	CheckLen(op, "alias", length(op, "alias", alias), tLen)
	if tLen == 0 {
		bad(op, "empty alias table")
	}
}

// CheckDistinctRows validates DistinctRows: cells K, rows K, starts K+1,
// perm K, count 1. It returns K.
func CheckDistinctRows(rows, starts, perm, count, cells I32) int {
	const op = "DistinctRows"
	k := length(op, "cells", cells)
	CheckLen(op, "rows", length(op, "rows", rows), k)
	CheckLen(op, "starts", length(op, "starts", starts), k+1)
	CheckLen(op, "perm", length(op, "perm", perm), k)
	CheckLen(op, "count", length(op, "count", count), 1)
	return k
}

// CheckCompactRows validates CompactRows: dx B×(N·E), perm K = B·N,
// starts K+1, count 1, grad K×E, order and width ≥ 1, a known layout. It
// returns K.
func CheckCompactRows(grad, dx F32, starts, perm, count I32, order, width int, layout Layout) int {
	const op = "CompactRows"
	if order <= 0 || width <= 0 {
		bad(op, "order %d, width %d", order, width)
	}
	CheckLayout(op, layout)
	k := length(op, "perm", perm)
	if k%order != 0 {
		bad(op, "perm of %d elements is not a multiple of order %d", k, order)
	}
	CheckLen(op, "dx", length(op, "dx", dx), k*width)
	CheckLen(op, "grad", length(op, "grad", grad), k*width)
	CheckLen(op, "starts", length(op, "starts", starts), k+1)
	CheckLen(op, "count", length(op, "count", count), 1)
	return k
}

// CheckSparseAdam validates SparseAdam: p, m, v R×E, g K×E with K =
// rows.Len(), count 1, width ≥ 1, and Adam's hyper-parameters as
// CheckAdam. It returns R and K.
func CheckSparseAdam(p, g, m, v F32, rows, count I32, width int, s AdamStep) (tableRows, k int) {
	const op = "SparseAdam"
	pl := length(op, "p", p)
	if width <= 0 {
		bad(op, "width %d", width)
	}
	if pl%width != 0 {
		bad(op, "p of %d elements is not a multiple of width %d", pl, width)
	}
	CheckLen(op, "m", length(op, "m", m), pl)
	CheckLen(op, "v", length(op, "v", v), pl)
	k = length(op, "rows", rows)
	CheckLen(op, "g", length(op, "g", g), k*width)
	CheckLen(op, "count", length(op, "count", count), 1)
	checkAdamStep(op, s)
	return pl / width, k
}

// CheckPairwise validates PairwiseForward (dx nil) and PairwiseBackward
// (op names which): order N ≥ 1, width E ≥ 2, y (dy) of B elements, x
// and, when not nil, dx of B·N·E. It returns B.
func CheckPairwise(op string, dx, y, x F32, order, width int) (batch int) {
	yName := "y"
	if op == "PairwiseBackward" {
		yName = "dy"
	}
	batch, xLen := length(op, yName, y), length(op, "x", x)
	if order < 1 || width < 2 {
		bad(op, "order %d, width %d (want order ≥ 1, width ≥ 2: K = width−1 factors and a bias column)", order, width)
	}
	CheckLen(op, "x", xLen, batch*order*width)
	if op == "PairwiseBackward" {
		CheckLen(op, "dx", length(op, "dx", dx), xLen)
	}
	return batch
}
