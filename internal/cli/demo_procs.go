package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gpuheal/gpuheal/internal/procs"
)

// demoProcesses are the sim fleet and the controller, run as the real
// binaries a cluster runs (with their flags), logging to files.
type demoProcesses struct {
	procs []*procs.Process
	// exited says which process stopped, how, and the end of its log.
	exited chan string
}

func startDemoProcesses(binDir, workDir, kubeconfig, schedulePath string, o *demoOptions, pace demoPace) (*demoProcesses, error) {
	p := &demoProcesses{exited: make(chan string, 2)}
	agent := []string{
		"--sim-fleet", "--gpu-backend=sim", "--kubeconfig=" + kubeconfig, "--interval=2s", "--call-timeout=1s",
		"--sim-fleet-faults-per-minute=" + formatRate(pace.faultsPerMinute),
		"--sim-fleet-seed=" + fmt.Sprint(o.seed), "--sim-fleet-dir=" + filepath.Join(workDir, "simfleet"),
		"--metrics-address=" + o.agentAddr, "--log-format=text",
		"--sim-fleet-schedule=" + schedulePath, "--agent-checks-interval=" + pace.agentChecks.String(),
		// The demo's cluster runs Kubernetes' Job controller; the check
		// Jobs are marked for the sim fleet, which plays it and the kubelet.
		"--sim-fleet-check-jobs-managed-by=" + demoCheckJobsManager, "--sim-fleet-check-speed=" + formatRate(o.speed),
	}
	controller := []string{
		"--kubeconfig=" + kubeconfig, "--providers=kwok", "--leader-elect=false",
		"--kwok-boot-delay=" + pace.bootDelay.String(), "--kwok-reboot-delay=" + pace.rebootDelay.String(),
		"--metrics-address=" + o.metricsAddr, "--health-address=127.0.0.1:0", "--status-page",
		"--metrics-secure=false", // the demo's own API server, on loopback; the browser opens the page plainly
		"--audit-sqlite-path=" + filepath.Join(workDir, "audit.db"), "--score-interval=10s", "--log-format=text",
		"--check-namespace=default", "--check-jobs-managed-by=" + demoCheckJobsManager,
	}
	for _, c := range []struct {
		name string
		args []string
	}{{"gpuheal-agent", agent}, {"gpuheal-controller", controller}} {
		proc, err := procs.Start(c.name, filepath.Join(binDir, c.name), filepath.Join(workDir, c.name+".log"), c.args...)
		if err != nil {
			return nil, errors.Join(err, p.stop())
		}
		p.procs = append(p.procs, proc)
		go func() {
			<-proc.Done()
			p.exited <- proc.Exited()
		}()
	}
	return p, nil
}

// demoCheckJobsManager is the spec.managedBy of the demo's check Jobs.
const demoCheckJobsManager = "gpuheal.io/sim-fleet"

// stop ends the processes, the controller first so that it does not act on
// agents that go away.
func (p *demoProcesses) stop() error {
	logger().Info("stopping gpuheal-controller and gpuheal-agent")
	return procs.StopAll(p.procs, 20*time.Second)
}
