// Command kernelgen generates the Go launchers of the CUDA kernels: for
// every kernels/NAME.cu it writes cuda/k_NAME.go, an unexported method of
// cuda.Backend that packs the kernel's arguments with exact-width types and
// launches it, plus cuda/k_kernels.go, the list of kernels the backend loads.
//
// It also enforces the kernel file conventions of the project (see
// kernels/common.cuh and the headers of the .cu files):
//
//   - exactly one `extern "C" __global__ void` per file, named after the file;
//   - a header comment stating Shapes:, Launch:, Atomics: and Reference:,
//     and whether the kernel overwrites (=) or accumulates (+=);
//   - parameters of the types float*, const float*, int32_t*,
//     const int32_t*, double* and uint32_t* (scratch), int32_t, uint32_t,
//     float and uint64_t only, every
//     pointer __restrict__, outputs before inputs before scalars.
//
// Usage, from the repository root:
//
//	go run ./cuda/internal/kernelgen            # write cuda/k_*.go
//	go run ./cuda/internal/kernelgen -check     # fail if they are stale
//	go run ./cuda/internal/kernelgen -c DIR     # CUDA library wrappers
//
// `make kernels` runs the first form, `make check-kernels` the second and
// `make kernels-lib` the third: for libdainx_kernels it writes a wrapper
// (DIR/kern_NAME.cu) for each kernel, which compiles kernels/NAME.cu with the kernel renamed
// dainx_kern_NAME (so that short names such as gather and adam cannot clash
// in a host program) plus its raw launch function dainx_kern_NAME_launch,
// and DIR/dainx_kern.h declaring those functions. Nothing it writes is
// committed, and the PTX of `make kernels` is unchanged.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func main() {
	src := flag.String("src", "kernels", "directory of the .cu kernel sources")
	out := flag.String("out", "cuda", "directory of the generated Go launchers")
	check := flag.Bool("check", false, "compare instead of writing; exit 1 if a launcher is stale")
	clib := flag.String("c", "", "write the CUDA library wrappers into this `directory` instead")
	flag.Parse()
	var err error
	if *clib != "" {
		err = runC(*src, *clib)
	} else {
		err = run(*src, *out, *check)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kernelgen:", err)
		os.Exit(1)
	}
}

// param is one kernel parameter.
type param struct {
	ctype string // normalised C type, e.g. "const float*"
	name  string // C name
}

// kernel is one parsed .cu file.
type kernel struct {
	name   string
	file   string // path relative to the repository root, slash-separated
	header []string
	params []param
}

var (
	globalRE = regexp.MustCompile(`__global__`)
	sigRE    = regexp.MustCompile(`extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\(([^)]*)\)`)
	spaceRE  = regexp.MustCompile(`\s+`)
)

// goType maps each allowed C parameter type to the Go type of the launcher
// argument and the driver.Args method that packs it.
var goType = map[string][2]string{
	"float*":         {"driver.DevicePtr", "Ptr"},
	"const float*":   {"driver.DevicePtr", "Ptr"},
	"int32_t*":       {"driver.DevicePtr", "Ptr"},
	"const int32_t*": {"driver.DevicePtr", "Ptr"},
	"double*":        {"driver.DevicePtr", "Ptr"},
	"uint32_t*":      {"driver.DevicePtr", "Ptr"},
	"int32_t":        {"int32", "Int32"},
	"uint32_t":       {"uint32", "Uint32"},
	"float":          {"float32", "Float32"},
	"uint64_t":       {"uint64", "Uint64"},
	"const int32_t":  {"int32", "Int32"},
	"const uint32_t": {"uint32", "Uint32"},
	"const float":    {"float32", "Float32"},
	"const uint64_t": {"uint64", "Uint64"},
}

func run(srcDir, outDir string, check bool) error {
	files, err := filepath.Glob(filepath.Join(srcDir, "*.cu"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no .cu files in %s", srcDir)
	}
	sort.Strings(files)
	var ks []kernel
	for _, f := range files {
		k, err := parse(f)
		if err != nil {
			return err
		}
		ks = append(ks, k)
	}
	want := map[string][]byte{}
	for _, k := range ks {
		b, err := launcher(k)
		if err != nil {
			return err
		}
		want["k_"+k.name+".go"] = b
	}
	b, err := list(ks)
	if err != nil {
		return err
	}
	want["k_kernels.go"] = b
	if b, err = launchTest(ks); err != nil {
		return err
	}
	want["k_launch_test.go"] = b

	if !check {
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(outDir, name), b, 0o644); err != nil {
				return err
			}
		}
		return removeStale(outDir, want, false)
	}
	var stale []string
	for name, b := range want {
		have, err := os.ReadFile(filepath.Join(outDir, name))
		if err != nil || !bytes.Equal(have, b) {
			stale = append(stale, name)
		}
	}
	if err := removeStale(outDir, want, true); err != nil {
		stale = append(stale, err.Error())
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return fmt.Errorf("launchers out of date (run `make kernels`): %s", strings.Join(stale, ", "))
	}
	return nil
}

// removeStale deletes (or, when checking, reports) generated k_*.go files of
// kernels that no longer exist.
func removeStale(outDir string, want map[string][]byte, check bool) error {
	have, err := filepath.Glob(filepath.Join(outDir, "k_*.go"))
	if err != nil {
		return err
	}
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; ok {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil || !bytes.HasPrefix(b, []byte(marker)) {
			continue // not ours
		}
		if check {
			return fmt.Errorf("%s has no kernel", filepath.Base(f))
		}
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	return nil
}

// parse reads one kernel file and checks its conventions.
func parse(path string) (kernel, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return kernel{}, err
	}
	text := string(b)
	stem := strings.TrimSuffix(filepath.Base(path), ".cu")
	k := kernel{name: stem, file: filepath.ToSlash(filepath.Join("kernels", filepath.Base(path))), header: header(text)}
	code := stripComments(text)
	if n := len(globalRE.FindAllStringIndex(code, -1)); n != 1 {
		return k, fmt.Errorf("%s: %d __global__ functions, want exactly one", path, n)
	}
	m := sigRE.FindStringSubmatch(code)
	if m == nil {
		return k, fmt.Errorf(`%s: the kernel is not declared extern "C" __global__ void NAME(...)`, path)
	}
	if m[1] != stem {
		return k, fmt.Errorf("%s: kernel %q, want the file stem %q", path, m[1], stem)
	}
	if err := checkHeader(path, k.header); err != nil {
		return k, err
	}
	seenConst, seenScalar := false, false
	for i, p := range strings.Split(m[2], ",") {
		p = strings.TrimSpace(spaceRE.ReplaceAllString(p, " "))
		if p == "" || p == "void" {
			continue
		}
		restrict := strings.Contains(p, "__restrict__")
		p = strings.TrimSpace(strings.ReplaceAll(p, "__restrict__", ""))
		p = strings.ReplaceAll(p, " *", "*")
		j := strings.LastIndexAny(p, " *")
		if j < 0 {
			return k, fmt.Errorf("%s: parameter %d %q has no name", path, i, p)
		}
		ctype, name := strings.TrimSpace(p[:j+1]), strings.TrimSpace(p[j+1:])
		ctype = strings.ReplaceAll(spaceRE.ReplaceAllString(ctype, " "), " *", "*")
		if _, ok := goType[ctype]; !ok {
			return k, fmt.Errorf("%s: parameter %s has type %q; allowed: float*, const float*, int32_t*, const int32_t*, double*, uint32_t*, int32_t, uint32_t, float, uint64_t", path, name, ctype)
		}
		ptr := strings.HasSuffix(ctype, "*")
		switch {
		case ptr && !restrict:
			return k, fmt.Errorf("%s: pointer parameter %s is not __restrict__", path, name)
		case ptr && seenScalar:
			return k, fmt.Errorf("%s: pointer parameter %s after a scalar; order: outputs, inputs, sizes, scalars", path, name)
		case ptr && !strings.HasPrefix(ctype, "const") && seenConst:
			return k, fmt.Errorf("%s: output %s after an input; order: outputs, inputs, sizes, scalars", path, name)
		case ptr && strings.HasPrefix(ctype, "const"):
			seenConst = true
		case !ptr:
			seenScalar = true
		}
		k.params = append(k.params, param{ctype: ctype, name: name})
	}
	return k, nil
}

// header returns the leading // comment block of a file, without the
// comment markers.
func header(text string) []string {
	var h []string
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "//") {
			break
		}
		t = strings.TrimPrefix(t, "//")
		t = strings.TrimPrefix(t, " ")
		h = append(h, strings.TrimRight(t, " "))
	}
	return h
}

// checkHeader verifies that a kernel's header states its contract.
func checkHeader(path string, h []string) error {
	all := strings.Join(h, "\n")
	for _, key := range []string{"Shapes:", "Launch:", "Atomics:", "Reference:"} {
		if !strings.Contains(all, key) {
			return fmt.Errorf("%s: header lacks %q", path, key)
		}
	}
	if !strings.Contains(all, "(=") && !strings.Contains(all, "(+=") && !strings.Contains(all, "= or +=") {
		return fmt.Errorf("%s: header does not say whether the kernel overwrites (=) or accumulates (+=)", path)
	}
	return nil
}

// stripComments removes // and /* */ comments (kernel sources have no
// string literals besides "C").
func stripComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "//"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return b.String()
			}
			i += j
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return b.String()
			}
			i += j + 4
			b.WriteByte(' ')
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// marker starts every generated file.
const marker = "// Code generated by kernelgen. DO NOT EDIT."

// camel turns snake_case into camelCase (upper: CamelCase).
func camel(s string, upper bool) string {
	var b strings.Builder
	up := upper
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// goName returns the Go name of a C parameter, avoiding keywords and the
// launcher's own parameter names.
func goName(c string) string {
	n := camel(c, false)
	switch {
	case token.IsKeyword(n), n == "grid", n == "block", n == "shared", n == "a", n == "be":
		return n + "Arg"
	}
	return n
}

// launcher generates cuda/k_NAME.go for one kernel.
func launcher(k kernel) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n// Source: %s\n\npackage cuda\n\n", marker, k.file)
	fmt.Fprintf(&b, "import \"github.com/dainx/dainx/cuda/driver\"\n\n")
	method := "k" + camel(k.name, true)
	fmt.Fprintf(&b, "// %s launches the kernel %s of %s. Its contract, from the\n// kernel's header:\n//\n", method, k.name, k.file)
	for _, line := range k.header {
		if line == "" {
			b.WriteString("//\n")
			continue
		}
		fmt.Fprintf(&b, "//\t%s\n", line)
	}
	fmt.Fprintf(&b, "//\n// It must run on the context thread; the caller has checked the shapes.\n")
	fmt.Fprintf(&b, "func (be *Backend) %s(grid, block driver.Dim3, shared uint32", method)
	for _, p := range k.params {
		fmt.Fprintf(&b, ", %s %s", goName(p.name), goType[p.ctype][0])
	}
	fmt.Fprintf(&b, ") error {\n\ta := be.args\n\ta.Reset()\n")
	for _, p := range k.params {
		fmt.Fprintf(&b, "\ta.%s(%s)\n", goType[p.ctype][1], goName(p.name))
	}
	fmt.Fprintf(&b, "\treturn be.launch(kernel%s, grid, block, shared, a)\n}\n", camel(k.name, true))
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: generated code does not parse: %v\n%s", k.file, err, b.Bytes())
	}
	return src, nil
}

// list generates cuda/k_kernels.go, the kernel identifiers and names.
func list(ks []kernel) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\npackage cuda\n\n", marker)
	fmt.Fprintf(&b, "// kernelID identifies one kernel, and the PTX module kernels/ptx/NAME.ptx\n// that holds it.\ntype kernelID int\n\n")
	fmt.Fprintf(&b, "// The kernels, one per file of kernels/.\nconst (\n")
	for i, k := range ks {
		if i == 0 {
			fmt.Fprintf(&b, "\tkernel%s kernelID = iota // %s\n", camel(k.name, true), k.file)
		} else {
			fmt.Fprintf(&b, "\tkernel%s // %s\n", camel(k.name, true), k.file)
		}
	}
	fmt.Fprintf(&b, "\tnumKernels\n)\n\n// kernelNames holds the name of each kernel, which is also the stem of\n// its source and PTX files.\nvar kernelNames = [numKernels]string{\n")
	for _, k := range ks {
		fmt.Fprintf(&b, "\t%q,\n", k.name)
	}
	fmt.Fprintf(&b, "}\n\n// kernelParamSizes holds the size in bytes of each parameter of each\n// kernel, in order, as its launcher packs it.\nvar kernelParamSizes = [numKernels][]int{\n")
	for _, k := range ks {
		var sz []string
		for _, p := range k.params {
			sz = append(sz, fmt.Sprint(cSize(p.ctype)))
		}
		fmt.Fprintf(&b, "\tkernel%s: {%s},\n", camel(k.name, true), strings.Join(sz, ", "))
	}
	fmt.Fprintf(&b, "}\n")
	return format.Source(b.Bytes())
}

// cSize returns the size in bytes of a parameter of C type t.
func cSize(t string) int {
	if strings.HasSuffix(t, "*") || strings.HasSuffix(t, "uint64_t") {
		return 8
	}
	return 4
}

// launchTest generates cuda/k_launch_test.go: a table that calls every
// launcher with zero arguments, so that a test can compare what the
// launcher packs with the parameters of the PTX, without a GPU.
func launchTest(ks []kernel) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\npackage cuda\n\nimport \"github.com/dainx/dainx/cuda/driver\"\n\n", marker)
	fmt.Fprintf(&b, "// launchZero calls the launcher of each kernel with zero arguments.\nvar launchZero = [numKernels]func(be *Backend) error{\n")
	for _, k := range ks {
		zeros := strings.Repeat(", 0", len(k.params))
		fmt.Fprintf(&b, "\tkernel%s: func(be *Backend) error { var z driver.Dim3; return be.k%s(z, z, 0%s) },\n", camel(k.name, true), camel(k.name, true), zeros)
	}
	fmt.Fprintf(&b, "}\n")
	return format.Source(b.Bytes())
}

// cType maps each allowed C parameter type to the type of the raw launch
// function's parameter.
var cType = map[string]string{
	"float*": "float*", "const float*": "const float*", "int32_t*": "int32_t*", "const int32_t*": "const int32_t*",
	"double*": "double*", "uint32_t*": "uint32_t*",
	"int32_t": "int32_t", "uint32_t": "uint32_t", "float": "float", "uint64_t": "uint64_t",
	"const int32_t": "int32_t", "const uint32_t": "uint32_t", "const float": "float", "const uint64_t": "uint64_t",
}

// runC writes the CUDA library wrappers (see the package doc).
func runC(srcDir, outDir string) error {
	files, err := filepath.Glob(filepath.Join(srcDir, "*.cu"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no .cu files in %s", srcDir)
	}
	sort.Strings(files)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	var h bytes.Buffer
	fmt.Fprintf(&h, "%s\n// The raw launch functions of the kernels, renamed dainx_kern_NAME, for\n// kernels/lib/dainx_kernels.cu. Each launches its kernel with the given\n// grid, block, dynamic shared memory and stream, and returns\n// cudaGetLastError(). Internal to libdainx_kernels.\n#pragma once\n\n#include <cstdint>\n#include <cuda_runtime.h>\n\n", marker)
	for _, f := range files {
		k, err := parse(f)
		if err != nil {
			return err
		}
		var params, args []string
		for _, p := range k.params {
			params = append(params, cType[p.ctype]+" "+p.name)
			args = append(args, p.name)
		}
		sig := fmt.Sprintf("cudaError_t dainx_kern_%s_launch(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, %s)", k.name, strings.Join(params, ", "))
		fmt.Fprintf(&h, "extern \"C\" %s;\n", sig)
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s\n// Source: %s, with the kernel renamed dainx_kern_%s.\n", marker, k.file, k.name)
		// The headers come first, so the rename below touches nothing in
		// them (and they are #pragma once).
		fmt.Fprintf(&b, "#include \"common.cuh\"\n#include \"gemm_tc.cuh\"\n#include \"linear_tc.cuh\"\n#include \"linear_simt.cuh\"\n#include \"dainx_kern.h\"\n\n")
		fmt.Fprintf(&b, "#define %s dainx_kern_%s\n#include \"%s.cu\"\n#undef %s\n\n", k.name, k.name, k.name, k.name)
		// Dynamic shared memory above the 48 KiB default (the tile variants of
		// the GEMM family) needs the kernel's opt-in attribute first.
		fmt.Fprintf(&b, "extern \"C\" %s {\n    if (shared > 48 * 1024) {\n        const cudaError_t e = cudaFuncSetAttribute(dainx_kern_%s, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared);\n        if (e != cudaSuccess) return e;\n    }\n    dainx_kern_%s<<<grid, block, shared, stream>>>(%s);\n    return cudaGetLastError();\n}\n", sig, k.name, k.name, strings.Join(args, ", "))
		if err := os.WriteFile(filepath.Join(outDir, "kern_"+k.name+".cu"), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(outDir, "dainx_kern.h"), h.Bytes(), 0o644)
}
