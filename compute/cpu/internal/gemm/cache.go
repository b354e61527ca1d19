package gemm

import (
	"os"
	"strconv"
	"strings"
)

// l2Bytes returns the size of the L2 cache of CPU 0 from Linux's sysfs, or 0
// when it cannot be read.
func l2Bytes() int {
	for i := 0; i < 8; i++ {
		dir := "/sys/devices/system/cpu/cpu0/cache/index" + strconv.Itoa(i) + "/"
		lvl, err := os.ReadFile(dir + "level")
		if err != nil {
			return 0
		}
		if strings.TrimSpace(string(lvl)) != "2" {
			continue
		}
		s, err := os.ReadFile(dir + "size")
		if err != nil {
			return 0
		}
		v := strings.TrimSpace(string(s))
		mul := 1
		switch {
		case strings.HasSuffix(v, "K"):
			mul, v = 1<<10, strings.TrimSuffix(v, "K")
		case strings.HasSuffix(v, "M"):
			mul, v = 1<<20, strings.TrimSuffix(v, "M")
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0
		}
		return n * mul
	}
	return 0
}

// blockNC512 returns the width of the packed B block of the AVX-512 kernel
// for an L2 cache of l2 bytes (0: unknown, taken as 1 MiB): the block
// (kcBlock rows of nc floats) fills half of L2, the rest being left to the
// A micro-panels and C; a multiple of 32 between 256 and ncBlock.
func blockNC512(l2 int) int {
	if l2 <= 0 {
		l2 = 1 << 20
	}
	nc := l2 / 2 / (kcBlock * 4) / 32 * 32
	return min(ncBlock, max(256, nc))
}
