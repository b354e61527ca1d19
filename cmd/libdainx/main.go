// Command libdainx is the dainx pipeline as a C library: built with
//
//	go build -buildmode=c-shared -o build/lib/libdainx.so ./cmd/libdainx
//
// (`make lib`), it exports the C API of dainx.h (the hand-written header
// that `make lib` installs; cgo's generated one is not used). The logic is
// in lib.go (plain Go, tested without cgo), the conversions in export.go,
// and the public C functions, the per-thread error and the result type in
// shim.c. dainx_augment runs `dainx augment` through the same flag
// definitions (internal/cli) and dain.Run; nothing here calls
// os/signal, so the library handles no asynchronous signal of its host.
//
// Built without cgo (CGO_ENABLED=0, as `go vet ./...` may be), it is an
// empty program.
package main

func main() {}
