package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// envtest starts etcd and kube-apiserver in their own process groups, so a
// test binary killed by a timeout or SIGKILL leaves them running and holding
// ports. Every started environment records its child processes in a pid file
// named after the owning process; the next Start kills the children of
// owners that are gone. Only processes running one of our binaries are
// killed, so a recycled pid is never hit.

func pidDir() string { return filepath.Join(os.TempDir(), "gpuheal-testenv") }

type child struct {
	pid int
	exe string
}

// ChildPIDs lists the processes whose parent is pid.
func ChildPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err == nil && parentOf(p) == pid {
			out = append(out, p)
		}
	}
	return out
}

// childrenRunning returns our own child processes whose executable lies in binDir.
func childrenRunning(binDir string) []child {
	var out []child
	for _, pid := range ChildPIDs(os.Getpid()) {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		if err != nil || filepath.Dir(exe) != binDir {
			continue
		}
		out = append(out, child{pid: pid, exe: exe})
	}
	return out
}

func parentOf(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	// The command name in field 2 may contain spaces; fields after the
	// closing parenthesis are fixed.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return -1
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// recordChildren writes the pid file of this process.
func recordChildren(binDir string) error {
	if err := os.MkdirAll(pidDir(), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for _, c := range childrenRunning(binDir) {
		fmt.Fprintf(&b, "%d %s\n", c.pid, c.exe)
	}
	return os.WriteFile(filepath.Join(pidDir(), strconv.Itoa(os.Getpid())), []byte(b.String()), 0o644)
}

func forgetChildren() { _ = os.Remove(filepath.Join(pidDir(), strconv.Itoa(os.Getpid()))) }

// reapOrphans kills the recorded children of owners that no longer exist.
func reapOrphans() {
	entries, _ := os.ReadDir(pidDir())
	for _, e := range entries {
		owner, err := strconv.Atoi(e.Name())
		if err != nil || processAlive(owner) {
			continue
		}
		path := filepath.Join(pidDir(), e.Name())
		data, _ := os.ReadFile(path)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			pidStr, exe, ok := strings.Cut(line, " ")
			pid, err := strconv.Atoi(pidStr)
			if !ok || err != nil {
				continue
			}
			if cur, err := os.Readlink(filepath.Join("/proc", pidStr, "exe")); err == nil && cur == exe {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = os.Remove(path)
	}
}

func processAlive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}
