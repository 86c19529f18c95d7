// Package procs is the one process runner: the demo and the soak run the
// gpuheal binaries with it, testenv runs kwok and the workload
// controllers with it, and tests run theirs through internal/testproc,
// a thin wrapper over it. Each child gets its own process group (a
// terminal's Ctrl-C is ours to pass on, in order), is killed if we die,
// and logs to a file or a writer. It does not import package testing:
// the operator CLI links it for the demo.
package procs

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Command says what to run and where its output goes.
type Command struct {
	// Name is how messages call the process; empty means the base name
	// of Path.
	Name string
	Path string
	Args []string
	// Env is added to this process's environment (later entries win).
	Env []string
	// Dir is the working directory; empty means ours.
	Dir string
	// LogPath, when set, is a file the output is appended to. With no
	// Output the child writes it itself, so a file-size limit set on the
	// child (the soak's full-disk chaos) applies to its log.
	LogPath string
	// Output, when set, also receives the output (stdout and stderr).
	Output io.Writer
	// StopSignal is what Stop sends first; zero means SIGTERM.
	StopSignal syscall.Signal
}

// Process is one running child.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	stopSig syscall.Signal
	done    chan struct{}
	err     error
	// tail keeps the end of the output when it goes to a writer, for
	// Tail and Exited; nil when the child writes its log file itself.
	tail    *tailBuffer
	started time.Time
}

// Start runs path with args, appending its output to logPath. It is
// Command{Name: name, Path: path, Args: args, LogPath: logPath}.Start().
func Start(name, path, logPath string, args ...string) (*Process, error) {
	return Command{Name: name, Path: path, Args: args, LogPath: logPath}.Start()
}

// Start runs the command and returns once it has been started.
func (c Command) Start() (*Process, error) {
	name := c.Name
	if name == "" {
		name = filepath.Base(c.Path)
	}
	p := &Process{Name: name, LogPath: c.LogPath, stopSig: c.StopSignal, done: make(chan struct{})}
	if p.stopSig == 0 {
		p.stopSig = syscall.SIGTERM
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	var logFile *os.File
	if c.LogPath != "" {
		f, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("opening the log of %s: %w", name, err)
		}
		logFile = f
	}
	// Not `out = logFile` when there is none: a nil *os.File in an
	// io.Writer is not nil, and exec would close the child's stdout.
	var out io.Writer
	if logFile != nil {
		out = logFile
	}
	if c.Output != nil {
		p.tail = newTailBuffer(tailBytes)
		ws := []io.Writer{c.Output, p.tail}
		if logFile != nil {
			ws = append(ws, logFile)
		}
		out = io.MultiWriter(ws...)
		// A grandchild that keeps our pipe open must not hold Wait.
		cmd.WaitDelay = 2 * time.Second
	}
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	// Its own process group keeps a terminal's Ctrl-C from reaching the
	// child before we stop it in order; Pdeathsig ends it if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			_ = logFile.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p.cmd, p.started = cmd, time.Now()
	go func() {
		p.err = cmd.Wait()
		if logFile != nil {
			_ = logFile.Close()
		}
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

// Err is how the process ended (nil for exit status 0); call it after
// Done is closed.
func (p *Process) Err() error { return p.err }

// Exited describes how the process ended and the end of its output.
func (p *Process) Exited() string {
	where := "its output"
	if p.LogPath != "" {
		where = p.LogPath
	}
	return fmt.Sprintf("%s exited (%v); the end of %s:\n%s", p.Name, p.err, where, p.Tail(5))
}
