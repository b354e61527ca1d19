package main

import (
	"fmt"
	"io"
	"time"

	"github.com/dainx/dainx/cmd/internal/cli"
	"github.com/dainx/dainx/tensor"
	"github.com/dainx/dainx/tensor/table"
)

// runPredictTable is dainx predict on cells given by ID (-index): a table
// read against the model's dictionaries (dictionaries.json beside its
// model.json), the predictions written by ID.
func runPredictTable(path, cells, index, value, output, report, format string, base int, backend string, evalBatch int, stdout, stderr io.Writer) error {
	t0 := time.Now()
	if err := checkEvalBatch(evalBatch); err != nil {
		return err
	}
	if base >= 0 {
		return fmt.Errorf("%w: -index-base is for cells of indices; -index reads IDs", errUsage)
	}
	// -index and -value checked before the model is loaded; again with its
	// dictionaries (cli.KnownTable).
	modes, err := table.ParseIndex(index)
	if err != nil {
		return fmt.Errorf("%w: -index %s: %v", errUsage, tensor.Echo(index), err)
	}
	for _, m := range modes {
		if m.Column == value {
			return fmt.Errorf("%w: column %s is both in -index and -value", errUsage, tensor.Echo(value))
		}
	}
	tf, err := cli.TableFormat(&inputFlags{Input: cells, Format: format})
	if err != nil {
		return err
	}
	return withPredictModel(path, cells, output, report, backend, evalBatch, stderr, func(p *predictModel) error {
		spec, known, err := cli.KnownTable(index, value, path, p.meta.Dims, "give -cells FILE of indices")
		if err != nil {
			return err
		}
		t, _, err := table.ReadFile(cells, spec, table.Options{Format: tf, Known: known, Repeats: true})
		if err != nil {
			return err
		}
		pred, rep, err := p.predict(t, path, cells, value != "")
		if err != nil {
			return err
		}
		valName := known.Value
		if valName == "" {
			valName = "value"
		}
		cols := []table.Column{}
		for _, m := range known.Modes {
			cols = append(cols, table.IDColumn(m))
		}
		cols = append(cols, table.Column{Name: valName, Type: table.ColFloat})
		write := func(w io.Writer, name string, f table.Format) error {
			tw, err := table.NewWriter(w, name, f, cols)
			if err != nil {
				return err
			}
			order := len(known.Modes)
			for k, v := range pred {
				for n, i := range t.Idx[k*order : (k+1)*order] {
					tw.ID(known.Modes[n], i)
				}
				tw.Float(float64(v), 32)
				if err := tw.EndRow(); err != nil {
					return err
				}
			}
			return tw.Close()
		}
		if output != "" {
			if err := p.outF.Write(func(w io.Writer) error { return write(w, output, cli.TableOut(output, tf)) }); err != nil {
				return err
			}
		} else {
			f := tf
			if f == table.Parquet {
				f = table.CSV // binary is no use on a terminal
			}
			if err := write(stdout, "", f); err != nil {
				return err
			}
		}
		return p.finish(&rep, t0, stderr)
	})
}
