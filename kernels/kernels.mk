# kernels/kernels.mk: make rules for the CUDA kernels, included by the
# top-level Makefile (`include kernels/kernels.mk`). Run from the repository
# root.
#
#   make kernels        compile kernels/*.cu to kernels/ptx/*.ptx (committed)
#                       and regenerate the Go launchers cuda/k_*.go
#   make check-kernels  CI, no GPU needed: every kernel compiles, ptxas accepts
#                       it for sm_90, and the committed PTX and launchers are
#                       what `make kernels` produces
#   make check-kernels-emu  CI, no GPU needed: every member of the GEMM family
#                       (kernels/*_128x64.cu, *_128x128.cu) run in the host
#                       emulator (scripts/kernel-emu) against a float64
#                       reference and bit for bit against the 64×64 kernels;
#                       the sparse kernels and Adam's (adam_at, sparse_adam_at
#                       against adam, sparse_adam; L2 against adam on g + l2·p)
#                       bit for bit; the pairwise kernels against float64 and
#                       bit for bit against their documented order
#   make device-bundle  build dainx and the test binaries (CGO_ENABLED=0) and
#                       copy the data into .dev/ for one run on a GPU machine
#
# nvcc and ptxas come from Debian's non-free nvidia-cuda-toolkit (CUDA 11.8):
# scripts/install-cuda-toolkit.sh.

NVCC ?= nvcc
PTXAS ?= ptxas
KERNEL_SRC := $(wildcard kernels/*.cu)
KERNEL_PTX := $(patsubst kernels/%.cu,kernels/ptx/%.ptx,$(KERNEL_SRC))

.PHONY: kernels check-kernels check-kernels-emu device-bundle

kernels: $(KERNEL_PTX)
	@for p in kernels/ptx/*.ptx; do \
		[ -f "kernels/$$(basename "$$p" .ptx).cu" ] || { echo "rm $$p"; rm -f "$$p"; }; \
	done
	go run ./cuda/internal/kernelgen

kernels/ptx/%.ptx: kernels/%.cu $(wildcard kernels/*.cuh) scripts/build-kernels.sh
	NVCC=$(NVCC) scripts/build-kernels.sh kernels/ptx $<

check-kernels:
	NVCC=$(NVCC) PTXAS=$(PTXAS) scripts/check-kernels.sh

check-kernels-emu:
	EMU_ONLY=family bash scripts/kernel-emu/run.sh
	EMU_ONLY=sparse bash scripts/kernel-emu/run.sh
	EMU_ONLY=pairwise bash scripts/kernel-emu/run.sh

device-bundle:
	scripts/device-bundle.sh
