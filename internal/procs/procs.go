// Package procs runs the gpuheal binaries as child processes for the demo
// and the soak test: each in its own process group (a terminal's Ctrl-C is
// ours to pass on, in order), killed if we die, logging to a file.
package procs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is one running child.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	log     *os.File
	started time.Time
}

// Start runs path with args, appending its output to logPath.
func Start(name, path, logPath string, args ...string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{}), log: logFile, started: time.Now()}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// PID of the process.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Started is when it was started.
func (p *Process) Started() time.Time { return p.started }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited describes how the process ended and the end of its log.
func (p *Process) Exited() string {
	return fmt.Sprintf("%s exited (%v); the end of %s:\n%s", p.Name, p.err, p.LogPath, Tail(p.LogPath, 5))
}

// Stop asks the process to end (SIGTERM) and kills it after timeout.
func (p *Process) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s; killed", p.Name, timeout)
	}
}

// Kill ends the process at once (SIGKILL), as a crash or an OOM kill does.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// StopAll stops the processes in reverse order of the slice.
func StopAll(ps []*Process, timeout time.Duration) error {
	var errs []error
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i] != nil {
			errs = append(errs, ps[i].Stop(timeout))
		}
	}
	return errors.Join(errs...)
}

// Tail is the last n lines of a file.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
