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

// childProcess is a control-plane process besides etcd and kube-apiserver
// (which envtest runs): kwok, kube-controller-manager, kube-scheduler.
type childProcess struct {
	name string
	cmd  *exec.Cmd
	// done closes when the process exits; waitErr is its exit status then.
	done    chan struct{}
	waitErr error
}

func startKwok(ctx context.Context, binDir, kubeconfig, workDir string, out io.Writer) (*childProcess, error) {
	return startChild(ctx, binDir, "kwok", workDir, out,
		"--kubeconfig="+kubeconfig,
		"--config="+filepath.Join(binDir, KwokStagesFile),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+FakeNodeAnnotation+"=fake",
		// Fake pod IPs only; a /16 leaves room for soak-sized fleets.
		"--cidr=10.0.0.0/16",
		"--node-ip=10.0.0.1",
	)
}

// startChild runs binDir/name with args and returns once it has not
// failed at start.
func startChild(ctx context.Context, binDir, name, workDir string, out io.Writer, args ...string) (*childProcess, error) {
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Dir = workDir
	cmd.Stdout, cmd.Stderr = out, out
	// Our own process group keeps a terminal's Ctrl-C from killing the
	// child before we stop it in order; Pdeathsig ends it if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &childProcess{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()
	// These run without a serving port, so there is no readiness endpoint;
	// a process that dies on bad flags or config does so at once, so give
	// it a moment to fail loudly rather than report success.
	select {
	case <-p.done:
		return nil, fmt.Errorf("%s exited at start: %w", name, p.waitErr)
	case <-ctx.Done():
		_ = p.stop()
		return nil, ctx.Err()
	case <-time.After(300 * time.Millisecond):
	}
	return p, nil
}

func (p *childProcess) stop() error {
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
		return fmt.Errorf("%s did not stop within 10s; killed", p.name)
	}
}

// startWorkloadControllers runs kube-controller-manager with the
// controllers workloads need on a kwok fleet (Deployments, ReplicaSets,
// PodDisruptionBudget status, node lifecycle and taint eviction, garbage
// collection) and kube-scheduler, neither serving a port.
func startWorkloadControllers(ctx context.Context, binDir, kubeconfig, workDir string, out io.Writer) ([]*childProcess, error) {
	auth := []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0"}
	kcm, err := startChild(ctx, binDir, "kube-controller-manager", workDir, out, append(auth,
		"--controllers=deployment,replicaset,disruption,garbagecollector,nodelifecycle,taint-eviction-controller",
		// kwok renews no Leases (with them, v0.8.0 never initializes a node
		// that the kwok provider creates unmanaged and hands over later)
		// and writes a status heartbeat only 10–20 minutes after it last
		// (re)started, so a kwok restarted more often than that (the soak
		// does after every API outage, see Env.RestartKwok) writes none.
		// A node declared lost stays lost for good: without a kubelet
		// nothing marks its pods Ready again, and every budget collapses
		// (the first one-hour soak saw 283 nodes go NotReady at minute
		// 30). Missing heartbeats are the simulation's, not a fault under
		// test, so the grace outlasts any run; explicit NotReady (a
		// simulated reboot) still counts at once.
		"--node-monitor-grace-period=24h",
		"--use-service-account-credentials=false")...)
	if err != nil {
		return nil, err
	}
	sched, err := startChild(ctx, binDir, "kube-scheduler", workDir, out, auth...)
	if err != nil {
		return nil, errors.Join(err, kcm.stop())
	}
	return []*childProcess{kcm, sched}, nil
}
