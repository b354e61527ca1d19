package nn

import "fmt"

// HostParams returns a copy of every parameter on the host, in the model's
// layout: the embedding table (Σₙ Iₙ rows of E, mode after mode; CoSTCo's
// rows of R), then for each Linear layer its weight (Out×In, row-major,
// PyTorch's nn.Linear.weight) and its bias (Out). It returns the backend's
// error if the download fails.
func (m *Net) HostParams() ([]float32, error) {
	host := make([]float32, m.params.Len())
	if err := m.be.Download(host, m.params); err != nil {
		return nil, err
	}
	return host, nil
}

// SetParams overwrites every parameter with host, in HostParams's layout
// (=, not accumulated). It panics if len(host) is not NumParams.
func (m *Net) SetParams(host []float32) {
	if len(host) != m.params.Len() {
		panic(fmt.Sprintf("nn: SetParams of %d values, the model has %d", len(host), m.params.Len()))
	}
	m.be.Upload(m.params, host)
}

// Layers returns the model's Linear layers, the output layer included.
func (m *Net) Layers() []Layer { return append([]Layer(nil), m.layers...) }
