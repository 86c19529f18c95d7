package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/procs"
)

// stopGrace is how long a control-plane child has to end after SIGTERM
// before it is killed.
const stopGrace = 10 * time.Second

// startFailWindow is how long a child that has no readiness endpoint is
// watched for an early exit: one that dies on bad flags or config does so
// at once, and should fail loudly rather than report success.
const startFailWindow = 300 * time.Millisecond

func startKwok(ctx context.Context, binDir, kubeconfig, workDir string, out io.Writer) (*procs.Process, error) {
	return startChild(ctx, binDir, "kwok", workDir, out,
		"--kubeconfig="+kubeconfig,
		"--config="+filepath.Join(binDir, KwokStagesFile),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+v1alpha1.AnnotationKwokManaged+"="+v1alpha1.KwokManagedValue,
		// Fake pod IPs only; a /16 leaves room for soak-sized fleets.
		"--cidr=10.0.0.0/16",
		"--node-ip=10.0.0.1",
	)
}

// startChild runs binDir/name with args (kwok, kube-controller-manager,
// kube-scheduler: the processes besides etcd and kube-apiserver, which
// envtest runs) and returns once it has not failed at start.
func startChild(ctx context.Context, binDir, name, workDir string, out io.Writer, args ...string) (*procs.Process, error) {
	p, err := procs.Command{Name: name, Path: filepath.Join(binDir, name), Args: args, Dir: workDir, Output: out}.Start()
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(startFailWindow)
	defer timer.Stop()
	select {
	case <-p.Done():
		return nil, fmt.Errorf("%s exited at start: %w", name, p.Err())
	case <-ctx.Done():
		_ = p.Stop(stopGrace)
		return nil, ctx.Err()
	case <-timer.C:
	}
	return p, nil
}

// stopChild stops p; nil is already stopped.
func stopChild(p *procs.Process) error {
	if p == nil {
		return nil
	}
	return p.Stop(stopGrace)
}

// startWorkloadControllers runs kube-controller-manager with the
// controllers workloads need on a kwok fleet (Deployments, ReplicaSets,
// PodDisruptionBudget status, node lifecycle and taint eviction, DRA
// device taint eviction, garbage collection) and kube-scheduler, neither
// serving a port.
func startWorkloadControllers(ctx context.Context, binDir, kubeconfig, workDir string, out io.Writer) ([]*procs.Process, error) {
	auth := []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0"}
	kcm, err := startChild(ctx, binDir, "kube-controller-manager", workDir, out, append(auth,
		"--controllers=deployment,replicaset,disruption,garbagecollector,nodelifecycle,taint-eviction-controller,device-taint-eviction-controller",
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
		return nil, errors.Join(err, stopChild(kcm))
	}
	return []*procs.Process{kcm, sched}, nil
}
