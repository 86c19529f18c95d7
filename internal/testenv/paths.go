package testenv

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// modulePath identifies the repository root when walking up from the
// working directory (tests run in their package directory).
const modulePath = "github.com/gpuheal/gpuheal"

// RepoRoot finds the root of the gpuheal checkout containing dir.
func RepoRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod of module %s above %s", modulePath, dir)
		}
		d = parent
	}
}

func isModuleRoot(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == modulePath
		}
	}
	return false
}

// BinDir is where hack/build-controlplane.sh puts kube-apiserver, etcd and
// kwok: $GPUHEAL_BIN_DIR, else $KUBEBUILDER_ASSETS, else <repo>/bin.
func BinDir() (string, error) {
	for _, env := range []string{"GPUHEAL_BIN_DIR", "KUBEBUILDER_ASSETS"} {
		if v := os.Getenv(env); v != "" {
			return filepath.Abs(v)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := RepoRoot(wd)
	if err != nil {
		return "", fmt.Errorf("locating bin/: %w (set GPUHEAL_BIN_DIR)", err)
	}
	return filepath.Join(root, "bin"), nil
}

// KwokStagesFile is the multi-document stage YAML that the build script
// copies out of the pinned kwok module.
const KwokStagesFile = "kwok-stages.yaml"

// MissingBinaries lists the control-plane files absent from dir.
func MissingBinaries(dir string, withKwok, withWorkloads bool) []string {
	need := []string{"kube-apiserver", "etcd"}
	if withKwok {
		need = append(need, "kwok", KwokStagesFile)
	}
	if withWorkloads {
		need = append(need, "kube-controller-manager", "kube-scheduler")
	}
	var missing []string
	for _, n := range need {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			missing = append(missing, n)
		}
	}
	return missing
}

// BuildHint tells a person how to get the binaries.
const BuildHint = "build them with `make controlplane` (hack/build-controlplane.sh; minutes on the first run)"
