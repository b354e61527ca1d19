package main

import (
	"github.com/dainx/dainx/compute"
	"github.com/dainx/dainx/cuda"
)

func init() {
	newCUDA = func() (compute.Backend, error) {
		be, err := cuda.New()
		if err != nil {
			return nil, err // a plain nil, not a nil *cuda.Backend
		}
		return be, nil
	}
}
