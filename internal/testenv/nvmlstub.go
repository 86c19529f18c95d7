package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NVMLStubSources is where the stand-in libnvidia-ml.so.1 lives, relative
// to the repository root: C that answers like an 8×H100 node, with modes
// for a missing driver, a lost GPU, an Xid event and an R470 driver
// (test/nvml/stub/README.md).
const NVMLStubSources = "test/nvml/stub"

// BuildNVMLStub compiles the stand-in library with gcc into out (a file
// path; its directory is created), with the soname the real one has so the
// agent loads it exactly as it loads NVIDIA's. defs are extra compiler
// flags, e.g. -DNVML_STUB_R470.
func BuildNVMLStub(repoRoot, out string, defs ...string) error {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		// Not a skip for callers: without gcc nothing about the ABI is proven.
		return fmt.Errorf("gcc is needed to build the stand-in libnvidia-ml.so.1 (apt-get install gcc): %w", err)
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, NVMLStubSources, "*.c"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no C sources in %s (err %w)", filepath.Join(repoRoot, NVMLStubSources), err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	args := append([]string{"-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden",
		"-shared", "-fPIC", "-Wl,-soname,libnvidia-ml.so.1", "-o", out}, defs...)
	if b, err := exec.Command(gcc, append(args, files...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("gcc %s: %w\n%s", strings.Join(defs, " "), err, b)
	}
	return nil
}
