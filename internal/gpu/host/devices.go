package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// deviceNodes lists /dev/nvidia* entries as host paths. Directories
// (/dev/nvidia-caps) are skipped; anything else counts, because fixture
// trees cannot hold character devices without root.
func deviceNodes(devFS string) ([]string, error) {
	entries, err := os.ReadDir(devFS)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "nvidia") && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if names == nil {
		return nil, nil
	}
	slices.SortFunc(names, naturalCompare)
	nodes := make([]string, len(names))
	for i, n := range names {
		nodes[i] = "/dev/" + n
	}
	return nodes, nil
}

// naturalCompare orders nvidia2 before nvidia10, as people read them, and
// so lists the GPUs (nvidiaN) before the other nodes.
func naturalCompare(a, b string) int {
	pa, na := splitNumber(a)
	pb, nb := splitNumber(b)
	if c := strings.Compare(pa, pb); c != 0 {
		return c
	}
	if na != nb {
		if na < nb {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// splitNumber splits "nvidia12" into ("nvidia", 12); n is -1 when s has no
// numeric suffix, which sorts nvidiactl-like names before numbered ones
// of the same prefix.
func splitNumber(s string) (prefix string, n int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	v, err := strconv.Atoi(s[i:])
	if err != nil {
		return s, -1
	}
	return s[:i], v
}

// hasNVSwitch reports NVSwitches from numbered nvidia-nvswitchN nodes or
// from the nvswitch driver's device list in procfs; nvidia-nvswitchctl
// alone only means the driver is loaded.
func hasNVSwitch(nodes []string, procFS string) (bool, error) {
	for _, n := range nodes {
		if p, num := splitNumber(strings.TrimPrefix(n, "/dev/")); p == "nvidia-nvswitch" && num >= 0 {
			return true, nil
		}
	}
	entries, err := os.ReadDir(filepath.Join(procFS, "driver", "nvidia-nvswitch", "devices"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return len(entries) > 0, nil
}
