package main

import (
	"math/rand/v2"
	"strconv"

	"github.com/dainx/dainx/bench/internal/roofline"
	"github.com/dainx/dainx/compute/cpu"
	"github.com/dainx/dainx/nn"
)

// netWork is a model of one cell's work through a net of dainx's: the
// floating-point operations (a multiply-add counts 2) and bytes of memory
// traffic of its forward pass, of its backward pass with the optimiser's
// update of the cell's embedding rows, and the dense layers' parameters,
// which each step updates once for the whole batch.
type netWork struct {
	fwdFlops, fwdBytes   float64 // forward: the Linear layers' products and biases (and the pairwise term); the rows gathered, the cell's indices and value
	stepFlops, stepBytes float64 // forward + backward + sparse Adam of the cell's rows
	dense                float64 // parameters of the Linear layers (Adam once a step)
	table                float64 // parameters of the embedding table (dense Adam's every step)
}

// workOf models m's work per cell. The Linear layers' products are
// 2·rows·in·out FLOP forward, twice that backward (the gradients at the
// weights and at the inputs, the first layer's being the rows'
// gradient); the activations stay in the caches at a batch of 1024, so
// the traffic per cell is the embedding rows gathered (order·width·4
// bytes), written back as gradients, and for sparse Adam each row's
// parameter, gradient and two moments read and three of them written (7
// float32 per element, about 10 FLOP).
func workOf(m *nn.Net) netWork {
	var w netWork
	for l := 1; l <= m.NumLayers(); l++ {
		sh, _, _, _, _ := m.Layer(l)
		r, in, out := float64(max(sh.Rows, 1)), float64(sh.In), float64(sh.Out)
		w.fwdFlops += r * (2*in*out + out)
		w.stepFlops += r * (6*in*out + 2*out)
		w.dense += in*out + out
	}
	rowElems := float64(m.Order() * m.Width())
	if m.Pairwise() {
		w.fwdFlops += 3 * rowElems
		w.stepFlops += 6 * rowElems
	}
	cell := float64(4*m.Order() + 4)
	w.fwdBytes = 4*rowElems + cell
	w.stepBytes = w.fwdBytes + 4*rowElems + 28*rowElems
	w.stepFlops += 10 * rowElems
	w.table = float64(m.TableRows() * m.Width())
	return w
}

// training returns the work of training a net of work w for cells cell
// passes in steps of batch cells with the table's optimiser opt (adam:
// the whole table every step), plus validation passes over val cells.
func (w netWork) training(cells, batch, val float64, opt string) (flops, bytes float64) {
	steps := cells / max(batch, 1)
	flops = cells*w.stepFlops + steps*10*w.dense + val*w.fwdFlops
	bytes = cells*w.stepBytes + steps*28*w.dense + val*w.fwdBytes
	if opt == nn.Adam {
		flops += steps * 10 * w.table
		bytes += steps * 28 * w.table
	}
	return flops, bytes
}

// account places each stage of run against the machine m, with a model of
// its work from the nets the run trained (built here on the CPU with the
// run's dims and layers: Θ and Θ′ MLPs, CoSTCo of rank 20 and 20 channels
// valuing the new cells, as dainx's defaults; the embedding optimisers the
// report names). TracIn is the paper's (the last layer at each epoch's
// checkpoint: a forward pass and a (D+1)-term dot per cell). Stages that
// do no arithmetic to speak of (read_split, sample, entity) get their
// bytes only: the input file for read_split.
func account(run *Run, m roofline.Machine, dims, layers []int, args []string, binBytes int64, opts map[string]string) []roofline.Stage {
	if run.Error != "" || run.Seconds == nil {
		return nil
	}
	be := cpu.New()
	defer be.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	mlp, err := nn.NewMLP(be, nn.Config{Dims: dims, Layers: layers, Capacity: 1}, rng)
	if err != nil {
		return nil
	}
	defer mlp.Free()
	costco, err := nn.NewCoSTCo(be, nn.CoSTCoConfig{Dims: dims, Rank: 20, Channels: 20, Capacity: 1}, rng)
	if err != nil {
		return nil
	}
	defer costco.Free()
	wm, wc := workOf(mlp), workOf(costco)
	batch, cbatch := float64(flagInt(args, "-batch", 1024)), float64(flagInt(args, "-costco-batch", 256))
	nt, na, nv := float64(run.NTrain), float64(run.NAug), float64(run.NVal)
	eb, ea := float64(run.Epochs), float64(run.EpochsAft)
	var out []roofline.Stage
	add := func(name string, cells, flops, bytes float64) {
		s := roofline.Stage{Name: name, Cells: cells, Seconds: run.Seconds[name], Flops: flops, Bytes: bytes}
		s.Place(m)
		out = append(out, s)
	}
	add("read_split", float64(run.Cells), 0, float64(binBytes))
	f, b := wm.training(nt*eb, batch, nv*eb, opts[nn.KindMLP])
	add("train", nt*eb, f, b)
	d := float64(mlp.LastHidden())
	add("influence", nt*eb, nt*eb*(wm.fwdFlops+2*(d+1)), nt*eb*wm.fwdBytes)
	add("entity", nt*float64(len(dims)), 0, 0)
	add("sample", na, 0, 0)
	f, b = wc.training(nt*eb, cbatch, nv*eb, opts[nn.KindCoSTCo])
	add("predict", nt*eb+na, f+na*wc.fwdFlops, b+na*wc.fwdBytes)
	f, b = wm.training((nt+na)*ea, batch, nv*ea, opts[nn.KindMLP])
	add("retrain", (nt+na)*ea, f, b)
	return out
}

// flagInt returns the integer value of flag name in args (as "-name v"),
// or def.
func flagInt(args []string, name string, def int) int {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			if v, err := strconv.Atoi(args[i+1]); err == nil {
				return v
			}
		}
	}
	return def
}
