package nn

import "github.com/dainx/dainx/compute"

// AdamState is a view of the optimiser state of a Train run, for the
// influence estimators that weigh gradients by Adam's preconditioner
// (package tracin's tracin-adam and in-run). Train fills the one
// TrainConfig.Adam points to: M and V when training starts, Step after
// every step, so that AfterEpoch sees the state after the epoch's last
// step (the state that produced Θ_k) and a StepHook's After the state
// after its step. The buffers are Train's own, valid until Train returns;
// the observer must not change them.
type AdamState struct {
	// M and V are Adam's first and second moments, laid out like
	// Net.Params. With SparseAdam the table's part holds each row's own
	// moments, which only the steps that touched the row changed.
	M, V compute.F32
	// Step holds Adam's hyper-parameters and, in T, the number of steps
	// taken so far (the bias correction of the latest step: v̂ = V/(1−β₂ᵀ)).
	Step compute.AdamStep
}

// StepHook observes training steps from inside Train
// (TrainConfig.Steps): it is called around every Every()-th optimiser
// step, the steps t (Adam's 1-based global step count, which a resumed
// run continues) with (t−1) mod Every() = 0. The calls queue work on the
// model's backend; Train's next synchronisation returns its sticky error.
type StepHook interface {
	// Every returns k ≥ 1.
	Every() int
	// Before runs before step t's forward pass, with the model at the
	// parameters θ_t the step's gradient is taken at. It may run
	// Forward, Backward and the like: the step's pass comes after it.
	Before(t int)
	// After runs after step t's optimiser update. The model's activations
	// (Act, Hidden) and gradients at them (DAct) are still those of the
	// step's pass at θ_t, and b describes the step's batch. On a cluster
	// (TrainConfig.Dist) every process runs Before at the same steps
	// (a hook may sum over the processes there), and After with its own
	// cells of the step's batch, or not at all when it has none.
	After(t int, b StepBatch)
}

// StepBatch is the batch of a training step, for StepHook.After.
type StepBatch struct {
	// N is the number of cells B (this process's, on a cluster).
	N int
	// Rows are the cells' global rows (B×N), as the pass read them.
	Rows compute.I32
	// Cells are the cells' numbers in the (local) training Set (B
	// elements, in the batch's order; distinct).
	Cells compute.I32
	// Delta is the gradient of the batch loss at the predictions the
	// backward pass took: Scale·(x̂ − x) per cell, Scale = 2/B (the
	// batch-mean MSE; B the global batch on a cluster), so a cell's own
	// loss (x̂ − x)² has gradient
	// Delta/Scale·… times the same activations. With
	// TrainConfig.NewWeight each new cell's Delta is also times its
	// weight.
	Delta compute.F32
	Scale float32
}
