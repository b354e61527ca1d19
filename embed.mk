# embed.mk: make rules for embedding dainx, included by the top-level
# Makefile. Everything is written under build/ (git-ignored).
#
#   make lib          build/lib/libdainx.so (go build -buildmode=c-shared
#                     ./cmd/libdainx, cgo), build/include/dainx.h (the
#                     hand-written header, cmd/libdainx/dainx.h) and
#                     build/lib/pkgconfig/dainx.pc; the dainx binary stays
#                     CGO_ENABLED=0
#   make install      PREFIX=/usr/local (DESTDIR honoured): lib, include,
#                     pkgconfig; libdainx_kernels too when it was built
#   make python       build/python/: the package dainx (python/dainx) with
#                     libdainx.so inside, and its pyproject.toml
#   make wheel        build/wheel/dainx-VERSION-py3-none-manylinux_X_Y_ARCH.whl
#                     (pip install it; no Go needed), checked
#   make kernels-lib  build/lib/libdainx_kernels.a and
#                     build/include/dainx_kernels.h (nvcc; fatbin with sm_80
#                     and sm_90 SASS and compute_90 PTX)
#   make examples     build/examples/c/augment and, where nvcc exists,
#                     build/examples/cuda/train_step
#   make test-embed   test-lib, test-python and, where nvcc exists,
#                     check-kernels-lib (no GPU needed for any of them)

PREFIX  ?= /usr/local
CC      ?= cc
PYTHON  ?= $(shell [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)
BUILD   := build
CUDA_ARCHS ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

.PHONY: lib install python wheel test-wheel test-pip-source kernels-lib examples examples-cuda build-dainx test-lib test-python check-kernels-lib test-embed
FORCE:

lib: $(BUILD)/lib/libdainx.so $(BUILD)/include/dainx.h $(BUILD)/lib/pkgconfig/dainx.pc

# Always handed to go build, whose cache makes a rebuild with nothing
# changed take a second.
$(BUILD)/lib/libdainx.so: FORCE
	@mkdir -p $(@D)
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -ldflags="-extldflags=-Wl,-soname,libdainx.so $(VERSION_LDFLAGS)" -o $@ ./cmd/libdainx
	@rm -f $(BUILD)/lib/libdainx.h  # cgo's generated header; dainx.h is the API

$(BUILD)/include/dainx.h: cmd/libdainx/dainx.h
	@mkdir -p $(@D)
	cp $< $@

# dainx.pc for the build tree (prefix = build/); install writes one for PREFIX.
dainx_pc = printf '%s\n' 'prefix=$(1)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	'Name: dainx' 'Description: DAIN, influence-guided tensor augmentation, as a C library' \
	'Version: $(VERSION_BASE)' 'Libs: -L$${libdir} -ldainx' 'Cflags: -I$${includedir}'

$(BUILD)/lib/pkgconfig/dainx.pc: embed.mk
	@mkdir -p $(@D)
	$(call dainx_pc,$(CURDIR)/$(BUILD)) >$@

install: lib
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 0755 $(BUILD)/lib/libdainx.so $(DESTDIR)$(PREFIX)/lib/
	install -m 0644 $(BUILD)/include/dainx.h $(DESTDIR)$(PREFIX)/include/
	$(call dainx_pc,$(PREFIX)) >$(BUILD)/dainx.pc.install
	install -m 0644 $(BUILD)/dainx.pc.install $(DESTDIR)$(PREFIX)/lib/pkgconfig/dainx.pc
	@if [ -f $(BUILD)/lib/libdainx_kernels.a ]; then \
		install -m 0644 $(BUILD)/lib/libdainx_kernels.a $(DESTDIR)$(PREFIX)/lib/ && \
		install -m 0644 $(BUILD)/include/dainx_kernels.h $(DESTDIR)$(PREFIX)/include/ && \
		echo "installed libdainx_kernels"; fi
	@echo "installed libdainx under $(DESTDIR)$(PREFIX)"

python: lib
	rm -rf $(BUILD)/python
	mkdir -p $(BUILD)/python
	cp -r python/dainx python/pyproject.toml python/setup.py python/README.md $(BUILD)/python/
	rm -rf $(BUILD)/python/dainx/__pycache__
	cp $(BUILD)/lib/libdainx.so $(BUILD)/python/dainx/
	@echo "built $(BUILD)/python: PYTHONPATH=$(BUILD)/python $(PYTHON) -c 'import dainx', or pip install $(BUILD)/python"

# The dainx binary is always built without cgo (purego loads CUDA).
build-dainx:
	CGO_ENABLED=0 $(GO) build -ldflags="$(VERSION_LDFLAGS)" -o dainx ./cmd/dainx

test-lib: lib build-dainx
	CC=$(CC) cmd/libdainx/ctest/run.sh

test-python: python build-dainx
	PYTHONPATH=$(BUILD)/python $(PYTHON) -m unittest discover -s python/tests -v
	PYTHONPATH=$(BUILD)/python $(PYTHON) examples/python/augment.py --epochs 2
	PYTHONPATH=$(BUILD)/python $(PYTHON) examples/python/estimator.py --synthetic --epochs 2 --out $(BUILD)/example-model
	$(MAKE) test-wheel test-pip-source

# The wheel: build/wheel/dainx-VERSION-py3-none-manylinux_X_Y_ARCH.whl with
# libdainx.so inside (X.Y: the newest glibc symbol version it needs),
# checked by scripts/check-wheel.py (tag, objdump -T floor, NEEDED only
# glibc, version). Installable with pip on a machine without Go.
WHEEL_DIR := $(BUILD)/wheel
wheel: python
	rm -rf $(WHEEL_DIR) $(BUILD)/python/build $(BUILD)/python/*.egg-info
	cd $(BUILD)/python && $(PYTHON) -m pip wheel -q --no-deps --no-build-isolation --no-index -w $(CURDIR)/$(WHEEL_DIR) .
	$(PYTHON) scripts/check-wheel.py $(WHEEL_DIR)/dainx-*.whl
	@echo "built $$(ls $(WHEEL_DIR)/dainx-*.whl): pip install it"

# The wheel installed into a fresh venv (numpy, pandas, scikit-learn from
# the system's site-packages) and the Python tests run against the
# installed package with no Go on PATH, from outside the checkout.
# PATH is an empty directory: no go (wherever CI installed it), no compiler.
NOGO_PATH := $(CURDIR)/$(BUILD)/empty-path
test-wheel: wheel build-dainx
	rm -rf $(NOGO_PATH) $(BUILD)/wheel-venv
	mkdir -p $(NOGO_PATH)
	$(PYTHON) -m venv --without-pip --system-site-packages $(BUILD)/wheel-venv
	env PATH=$(NOGO_PATH) $(BUILD)/wheel-venv/bin/python -m pip install -q --no-index --no-deps $(WHEEL_DIR)/dainx-*.whl
	cd / && env PATH=$(NOGO_PATH) $(CURDIR)/$(BUILD)/wheel-venv/bin/python -c 'import dainx; assert "wheel-venv" in dainx.__file__, dainx.__file__; print("wheel installed:", dainx.__file__, dainx.__version__)'
	cd / && env PATH=$(NOGO_PATH) DAINX_BIN=$(CURDIR)/dainx $(CURDIR)/$(BUILD)/wheel-venv/bin/python -m unittest discover -s $(CURDIR)/python/tests -t $(CURDIR)/python/tests

# pip install ./python from the checkout: without Go it fails while
# building, with a message (never a package whose import fails); with Go
# it builds libdainx itself.
test-pip-source: build-dainx
	rm -rf $(NOGO_PATH) $(BUILD)/pip-nogo $(BUILD)/pip-go python/build python/*.egg-info
	mkdir -p $(NOGO_PATH)
	if env PATH=$(NOGO_PATH) $(PYTHON) -m pip install --no-build-isolation --no-index --no-deps --target $(BUILD)/pip-nogo ./python >$(BUILD)/pip-nogo.log 2>&1; then \
		echo "test-pip-source: pip install ./python without Go succeeded"; exit 1; fi
	grep -q "cannot build the Python package: dainx/libdainx.so is missing, and building it needs .go." $(BUILD)/pip-nogo.log
	test ! -e $(BUILD)/pip-nogo/dainx
	@echo "pip install ./python without Go: fails at build time, as it should"
	$(PYTHON) -m pip install -q --no-build-isolation --no-index --no-deps --target $(BUILD)/pip-go ./python
	rm -rf python/build python/*.egg-info
	cd / && PYTHONPATH=$(CURDIR)/$(BUILD)/pip-go $(PYTHON) -c 'import dainx; i, v, r = dainx.augment([[0, 1], [1, 0], [2, 2], [1, 1], [0, 0], [2, 1], [1, 2], [0, 2], [2, 0], [3, 3]], [1.0] * 10, layers="8,4", epochs=1, backend="cpu", quiet=True, method="random"); assert "pip-go" in dainx.library_path; print("pip install ./python with Go: built libdainx,", r["n_aug"], "new cells")'

# ---- the kernels as a CUDA library ----

KLIB_GEN := $(BUILD)/kernels-lib/gen
KLIB_OBJ := $(BUILD)/kernels-lib/obj

kernels-lib: $(BUILD)/lib/libdainx_kernels.a $(BUILD)/include/dainx_kernels.h

$(BUILD)/include/dainx_kernels.h: kernels/lib/dainx_kernels.h
	@mkdir -p $(@D)
	cp $< $@

# kernelgen -c writes one wrapper per kernel (kernels/NAME.cu with the
# kernel renamed dainx_kern_NAME, and its raw launch function) and
# dainx_kern.h; nvcc compiles them with the launchers of
# kernels/lib/dainx_kernels.cu into one static library.
$(BUILD)/lib/libdainx_kernels.a: $(KERNEL_SRC) $(wildcard kernels/*.cuh) kernels/lib/dainx_kernels.cu kernels/lib/dainx_kernels.h kernels/lib/geometry.h cuda/internal/kernelgen/main.go embed.mk
	@mkdir -p $(@D) $(KLIB_GEN) $(KLIB_OBJ)
	rm -f $(KLIB_GEN)/*.cu $(KLIB_OBJ)/*.o
	$(GO) run ./cuda/internal/kernelgen -c $(KLIB_GEN)
	ls $(KLIB_GEN)/*.cu kernels/lib/dainx_kernels.cu | xargs -P "$$(nproc 2>/dev/null || echo 2)" -I{} sh -c \
		'$(NVCC) $(CUDA_ARCHS) -O3 -lineinfo -std=c++14 -Xcompiler -fPIC -Ikernels -Ikernels/lib -I$(KLIB_GEN) \
			-c {} -o $(KLIB_OBJ)/$$(basename {} .cu).o'
	@[ "$$(ls $(KLIB_OBJ)/*.o | wc -l)" -eq "$$(ls $(KLIB_GEN)/*.cu kernels/lib/dainx_kernels.cu | wc -l)" ]
	rm -f $@
	ar rcs $@ $(KLIB_OBJ)/*.o
	@echo "built $@"

# cuobjdump lists SASS for sm_80 and sm_90 and PTX for compute_90 in every
# object, and every launcher of dainx_kernels.h is defined; the launchers'
# argument checks hold on the host (kernels/lib/args_test.cu; it also runs
# the valid calls where a GPU exists).
check-kernels-lib: kernels-lib
	scripts/check-kernels-lib.sh $(BUILD)/lib/libdainx_kernels.a
	@mkdir -p $(BUILD)/kernels-lib
	$(NVCC) -O1 -std=c++14 -Ikernels/lib kernels/lib/args_test.cu -L$(BUILD)/lib -ldainx_kernels -o $(BUILD)/kernels-lib/args_test
	$(BUILD)/kernels-lib/args_test

# ---- examples ----

examples: lib
	@mkdir -p $(BUILD)/examples/c
	PKG_CONFIG_PATH=$(CURDIR)/$(BUILD)/lib/pkgconfig $(CC) -std=c11 -Wall -O2 examples/c/augment.c \
		$$(PKG_CONFIG_PATH=$(CURDIR)/$(BUILD)/lib/pkgconfig pkg-config --cflags --libs dainx) \
		-Wl,-rpath,$(CURDIR)/$(BUILD)/lib -o $(BUILD)/examples/c/augment
	@if command -v $(NVCC) >/dev/null 2>&1; then $(MAKE) --no-print-directory examples-cuda; \
	else echo "examples: $(NVCC) not found; examples/cuda not built"; fi

examples-cuda: kernels-lib
	@mkdir -p $(BUILD)/examples/cuda
	$(NVCC) $(CUDA_ARCHS) -O2 -std=c++14 -I$(BUILD)/include examples/cuda/train_step.cu \
		-L$(BUILD)/lib -ldainx_kernels -o $(BUILD)/examples/cuda/train_step
	@echo "built $(BUILD)/examples/cuda/train_step (run it where a GPU exists)"

test-embed: test-lib test-python
	@if command -v $(NVCC) >/dev/null 2>&1; then $(MAKE) --no-print-directory check-kernels-lib examples-cuda; \
	else echo "test-embed: $(NVCC) not found; the CUDA library was not built"; fi
