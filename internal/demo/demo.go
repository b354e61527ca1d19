// Package demo embeds the tensor that dainx runs on when no input is given:
// DAIN's own demo tensor, data/synthetic_10K.tensor of
// github.com/srijankr/DAIN (commit 89edec24e63383dfd5ef19f2bfb48d11b75b3dde,
// Apache License 2.0), by S. Oh, S. Kim, R. A. Rossi and S. Kumar,
// "Influence-guided Data Augmentation for Neural Tensor Completion", CIKM
// 2021. It is stored byte for byte, gzip-compressed (gzip -9 -n).
//
// The tensor is synthetic, order 3, dims 1000×1000×1000, 10,000 cells,
// values in [1.09, 5.61]. The reference PyTorch code ran it end to end in
// 203 s on a 2-core CPU, printing MSE 0.2325 → 0.2188 (SPEC.md).
package demo

import (
	"bytes"
	_ "embed"

	"github.com/dainx/dainx/tensor"
)

//go:embed synthetic_10K.tsv.gz
var gz []byte

// Name is the demo tensor's file name, used in messages and reports.
const Name = "synthetic_10K.tsv"

// Read decodes the embedded demo tensor (DAIN TSV, 0-based).
func Read() (*tensor.COO, error) {
	return tensor.Read(bytes.NewReader(gz), Name, tensor.ReadOptions{Format: tensor.TSV, IndexBase: -1})
}
