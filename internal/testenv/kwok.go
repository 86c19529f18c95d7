package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// FakeNodeAnnotation marks the nodes kwok manages; real nodes in a mixed
// cluster are left alone.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

type kwokProcess struct {
	cmd *exec.Cmd
	// done closes when kwok exits; waitErr is its exit status then.
	done    chan struct{}
	waitErr error
}

func startKwok(ctx context.Context, binDir, kubeconfig, workDir string, out io.Writer) (*kwokProcess, error) {
	cmd := exec.Command(filepath.Join(binDir, "kwok"),
		"--kubeconfig="+kubeconfig,
		"--config="+filepath.Join(binDir, KwokStagesFile),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+FakeNodeAnnotation+"=fake",
		// Fake pod IPs only; a /16 leaves room for soak-sized fleets.
		"--cidr=10.0.0.0/16",
		"--node-ip=10.0.0.1",
	)
	cmd.Dir = workDir
	cmd.Stdout, cmd.Stderr = out, out
	// Our own process group keeps a terminal's Ctrl-C from killing kwok
	// before we stop it in order; Pdeathsig ends it if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kwok: %w", err)
	}
	p := &kwokProcess{cmd: cmd, done: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()
	// kwok has no readiness endpoint without a server port; a process that
	// dies on bad flags or config does so at once, so give it a moment to
	// fail loudly rather than report success.
	select {
	case <-p.done:
		return nil, fmt.Errorf("kwok exited at start: %w", p.waitErr)
	case <-ctx.Done():
		_ = p.stop()
		return nil, ctx.Err()
	case <-time.After(300 * time.Millisecond):
	}
	return p, nil
}

func (p *kwokProcess) stop() error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("kwok did not stop within 10s; killed")
	}
}
