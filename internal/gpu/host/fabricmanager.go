package host

import (
	"os"
	"path/filepath"
	"strings"
)

// fmComm is nv-fabricmanager as /proc/PID/comm shows it: the kernel keeps
// only 15 characters of a command name, and the binary's name has 16.
const fmComm = "nv-fabricmanage"

func fabricManagerState(opts Options) (string, error) {
	if opts.FabricManagerState != nil {
		return opts.FabricManagerState()
	}
	running, err := fabricManagerRunning(opts.procFS())
	if err != nil {
		return "", err
	}
	if running {
		return FabricManagerRunning, nil
	}
	paths := opts.FabricManagerPaths
	if paths == nil {
		paths = DefaultFabricManagerPaths
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(opts.root(), p)); err == nil {
			return FabricManagerStopped, nil
		}
	}
	return FabricManagerNotInstalled, nil
}

// fabricManagerRunning scans /proc/*/comm. Processes that exit during the
// scan are skipped; only an unreadable /proc is an error.
func fabricManagerRunning(procFS string) (bool, error) {
	entries, err := os.ReadDir(procFS)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !isPID(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procFS, e.Name(), "comm"))
		if err != nil {
			continue // exited, or hidden from us
		}
		if strings.HasPrefix(strings.TrimSpace(string(b)), fmComm) {
			return true, nil
		}
	}
	return false, nil
}

func isPID(name string) bool {
	return name != "" && strings.Trim(name, "0123456789") == ""
}
