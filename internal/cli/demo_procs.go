package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// demoProcesses are the sim fleet and the controller, run as the real
// binaries a cluster runs (with their flags), logging to files.
type demoProcesses struct {
	procs []*demoProcess
	// exited says which process stopped, how, and the end of its log.
	exited chan string
}

type demoProcess struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  *os.File
}

func startDemoProcesses(ctx context.Context, binDir, workDir, kubeconfig string, o *demoOptions, pace demoPace) (*demoProcesses, error) {
	p := &demoProcesses{exited: make(chan string, 2)}
	agent := []string{
		"--sim-fleet", "--gpu-backend=sim", "--kubeconfig=" + kubeconfig, "--interval=2s", "--call-timeout=1s",
		"--sim-fleet-faults-per-minute=" + formatRate(pace.faultsPerMinute),
		"--sim-fleet-seed=" + fmt.Sprint(o.seed), "--sim-fleet-dir=" + filepath.Join(workDir, "kmsg"),
		"--metrics-address=" + o.agentAddr, "--log-format=text",
	}
	controller := []string{
		"--kubeconfig=" + kubeconfig, "--providers=kwok", "--leader-elect=false",
		"--kwok-boot-delay=" + pace.bootDelay.String(), "--kwok-reboot-delay=" + pace.rebootDelay.String(),
		"--metrics-address=" + o.metricsAddr, "--health-address=127.0.0.1:0", "--status-page",
		"--audit-sqlite-path=" + filepath.Join(workDir, "audit.db"), "--score-interval=10s", "--log-format=text",
	}
	for _, c := range []struct {
		name string
		args []string
	}{{"gpuheal-agent", agent}, {"gpuheal-controller", controller}} {
		proc, err := startDemoProcess(ctx, binDir, workDir, c.name, c.args, p.exited)
		if err != nil {
			return nil, errors.Join(err, p.stop(slog.Default()))
		}
		p.procs = append(p.procs, proc)
	}
	return p, nil
}

func startDemoProcess(ctx context.Context, binDir, workDir, name string, args []string, exited chan<- string) (*demoProcess, error) {
	logFile, err := os.Create(filepath.Join(workDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group keeps the terminal's Ctrl-C for us, so we stop
	// it in order; Pdeathsig ends it if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &demoProcess{name: name, cmd: cmd, done: make(chan struct{}), log: logFile}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
		exited <- fmt.Sprintf("%s exited (%v); the end of %s:\n%s", name, p.err, logFile.Name(), logTail(logFile.Name(), 5))
	}()
	return p, nil
}

// stop ends the processes, the controller first so that it does not act on
// agents that go away.
func (p *demoProcesses) stop(log *slog.Logger) error {
	var errs []error
	for i := len(p.procs) - 1; i >= 0; i-- {
		proc := p.procs[i]
		log.Info("stopping " + proc.name)
		_ = proc.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-proc.done:
		case <-time.After(20 * time.Second):
			_ = proc.cmd.Process.Kill()
			<-proc.done
			errs = append(errs, fmt.Errorf("%s did not stop within 20s; killed", proc.name))
		}
		_ = proc.log.Close()
	}
	return errors.Join(errs...)
}

// logTail is the last n lines of a log file.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
