module github.com/dainx/dainx

go 1.25.0

require gonum.org/v1/gonum v0.17.0

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
