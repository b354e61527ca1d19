package gemmtune

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dainx/dainx/internal/outtx"
)

// Mode is how the CUDA backend picks a variant at the first use of a GEMM
// shape.
type Mode int

const (
	// Time ranks by the model, times the top few on the device (events,
	// warm-ups, median) and caches the winner on disk. ParseMode's default;
	// the CUDA backend keeps Off by default (cuda.Options.GemmTune's zero
	// value) until a GPU run has verified the family (docs/gpu-tuning.md).
	Time Mode = iota
	// ModelOnly takes the model's top choice, no timing, no cache.
	ModelOnly
	// Off keeps the fixed choice of dainx before tuning (64×64 tiles).
	Off
)

// String returns "time", "model" or "off".
func (m Mode) String() string {
	switch m {
	case Time:
		return "time"
	case ModelOnly:
		return "model"
	case Off:
		return "off"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses a mode's name: "" or "time", "model", "off" (in any
// case, spaces around ignored).
func ParseMode(s string) (Mode, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "", "time":
		return Time, nil
	case "model":
		return ModelOnly, nil
	case "off":
		return Off, nil
	}
	return Time, fmt.Errorf("GEMM tuning mode %q: want time, model or off", s)
}

// Key identifies one tuning result: the device (GPU name, compute
// capability, SM count, driver version), the kernels (a hash of their PTX)
// and the GEMM (op, which fixes the layout, shape, split and precision).
type Key struct {
	GPU          string
	Major, Minor int
	SMs          int
	Driver       int
	PTX          string // hex hash of the family's PTX
	Shape        Shape
}

// String returns the key as stored in the cache file.
func (k Key) String() string {
	return fmt.Sprintf("gpu=%s|cc=%d.%d|sms=%d|driver=%d|ptx=%s|op=%v|m=%d|n=%d|k=%d|parts=%d|prec=%v",
		k.GPU, k.Major, k.Minor, k.SMs, k.Driver, k.PTX, k.Shape.Op, k.Shape.M, k.Shape.N, k.Shape.K, k.Shape.Parts, k.Shape.Precision)
}

// Entry is one cached result: the winning variant and the median times of
// the variants timed, µs.
type Entry struct {
	Variant string             `json:"variant"`
	Micros  map[string]float64 `json:"micros,omitempty"`
}

// Cache is the table of tuning results, in memory and in one JSON file.
// Safe for concurrent use.
type Cache struct {
	path    string
	mu      sync.Mutex
	entries map[string]Entry
}

// cacheFile is the file's format.
type cacheFile struct {
	Version int              `json:"version"`
	Entries map[string]Entry `json:"entries"`
}

const cacheVersion = 1

// DefaultPath returns os.UserCacheDir()/dainx/gemm-tune.json.
func DefaultPath() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "dainx", "gemm-tune.json"), nil
}

// Open reads the cache at path. A missing, unreadable or malformed file
// gives an empty cache (tuning runs again) and, for the last two, an error
// saying so; the cache is usable either way.
func Open(path string) (*Cache, error) {
	c := &Cache{path: path, entries: map[string]Entry{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("gemmtune: read cache: %w", err)
	}
	var f cacheFile
	if err := json.Unmarshal(b, &f); err != nil {
		return c, fmt.Errorf("gemmtune: cache %s: %w", path, err)
	}
	if f.Version == cacheVersion && f.Entries != nil {
		c.entries = f.Entries
	}
	return c, nil
}

// Path returns the cache file's path.
func (c *Cache) Path() string { return c.path }

// Get returns the entry of k.
func (c *Cache) Get(k Key) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k.String()]
	return e, ok
}

// Len returns the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Put records e for k in memory and writes the whole cache to its file
// atomically (a temporary file in the same directory, then a rename), the
// directory created if needed. On a write error (an unwritable directory)
// the entry stays in memory and the error is returned; callers go on.
func (c *Cache) Put(k Key, e Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[k.String()] = e
	if c.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(cacheFile{Version: cacheVersion, Entries: c.entries}, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(c.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gemmtune: write cache: %w", err)
	}
	outtx.Sweep(dir, filepath.Base(c.path))
	tmp, err := outtx.CreateTemp(dir, filepath.Base(c.path))
	if err != nil {
		return fmt.Errorf("gemmtune: write cache: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), c.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("gemmtune: write cache %s: %w", c.path, outtx.Bare(werr))
	}
	return nil
}
