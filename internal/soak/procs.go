package soak

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/procs"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// run is one soak's live state: the environment and the processes.
type run struct {
	opts     Options
	pace     pace
	env      *testenv.Env
	c        client.Client
	workDir  string
	log      *slog.Logger
	schedule string
	apiAudit string // the API server's audit log
	epoch    time.Time

	mu          sync.Mutex
	fleet       *procs.Process
	controllers [2]*procs.Process
	// controllerAddr are the replicas' metrics addresses.
	controllerAddr [2]string
	fleetAddr      string
	// lifetimes of every process started, for the growth check.
	started []*procs.Process
	// expected marks processes stopped or killed on purpose; any other
	// exit is restarted, as the kubelet restarts a crashed container
	// (the controller exits by design when it loses its leader Lease).
	expected map[*procs.Process]bool
	stopping bool
	// crashRestarts counts those restarts, by process name.
	crashRestarts map[string]int
}

// supervise restarts p with start when it exits on its own, after the
// kubelet's first back-off of 10 s.
func (r *run) supervise(p *procs.Process, start func() error) {
	go func() {
		<-p.Done()
		r.mu.Lock()
		if r.expected[p] || r.stopping {
			r.mu.Unlock()
			return
		}
		if r.crashRestarts == nil {
			r.crashRestarts = map[string]int{}
		}
		r.crashRestarts[p.Name]++
		r.mu.Unlock()
		r.log.Info("soak: a process exited on its own; restarting it in 10s", "exit", p.Exited())
		time.Sleep(10 * time.Second)
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if !stopping {
			if err := start(); err != nil {
				r.log.Error("soak: restarting", "process", p.Name, "err", err)
			}
		}
	}()
}

// expect marks p's coming exit as intended.
func (r *run) expect(p *procs.Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.expected == nil {
		r.expected = map[*procs.Process]bool{}
	}
	r.expected[p] = true
}

// checkJobsManager is the spec.managedBy of the health gate's check Jobs.
const checkJobsManager = "gpuheal.io/sim-fleet"

func (r *run) simFleetDir() string { return filepath.Join(r.workDir, "simfleet") }
func (r *run) chaosFile() string   { return filepath.Join(r.workDir, "provider-chaos") }
func (r *run) auditDB() string     { return filepath.Join(r.workDir, "audit.db") }

func (r *run) startProcesses(_ context.Context) error {
	var err error
	if r.fleetAddr, err = procs.FreeLoopbackAddr(); err != nil {
		return err
	}
	if err := r.startFleet(); err != nil {
		return err
	}
	if r.opts.Mode != Live {
		return nil
	}
	for i := range r.controllers {
		if r.controllerAddr[i], err = procs.FreeLoopbackAddr(); err != nil {
			return err
		}
		if err := r.startController(i); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) startFleet() error {
	p, err := procs.Start("gpuheal-agent", filepath.Join(r.opts.OwnBinDir, "gpuheal-agent"), filepath.Join(r.workDir, "gpuheal-agent.log"),
		"--sim-fleet", "--gpu-backend=sim", "--kubeconfig="+r.env.Kubeconfig, "--interval=2s", "--call-timeout=1s",
		"--sim-fleet-dir="+r.simFleetDir(), "--sim-fleet-schedule="+r.schedule,
		"--sim-fleet-epoch="+r.epoch.UTC().Format(time.RFC3339Nano), "--sim-fleet-seed="+strconv.FormatInt(r.opts.Seed, 10),
		"--metrics-address="+r.fleetAddr, "--log-format=json",
		"--agent-checks-interval="+r.pace.agentChecks.String(), "--sim-fleet-latent-surface-after="+r.pace.latentSurface.String(),
		// The cluster runs Kubernetes' Job controller; the check Jobs are
		// marked for the sim fleet, which plays it and the kubelet.
		"--sim-fleet-check-jobs-managed-by="+checkJobsManager, "--sim-fleet-check-speed="+strconv.FormatFloat(r.opts.Speed, 'g', -1, 64))
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.fleet = p
	r.started = append(r.started, p)
	r.mu.Unlock()
	r.supervise(p, r.startFleet)
	return nil
}

// startController starts replica i; both share the audit file (SQLite
// takes one writer at a time and the chain follows the file's head) and
// the leader Lease.
func (r *run) startController(i int) error {
	p, err := procs.Start(fmt.Sprintf("gpuheal-controller-%d", i), filepath.Join(r.opts.OwnBinDir, "gpuheal-controller"),
		filepath.Join(r.workDir, fmt.Sprintf("gpuheal-controller-%d.log", i)),
		"--kubeconfig="+r.env.Kubeconfig, "--providers=kwok", "--leader-elect=true", "--leader-election-namespace=default",
		"--kwok-boot-delay="+r.pace.bootDelay.String(), "--kwok-reboot-delay="+r.pace.rebootDelay.String(),
		"--kwok-chaos-file="+r.chaosFile(), "--metrics-address="+r.controllerAddr[i], "--health-address=127.0.0.1:0",
		"--metrics-secure=false", // loopback only: the soak scrapes it plainly
		"--audit-sqlite-path="+r.auditDB(), "--score-interval=30s", "--log-format=json",
		"--check-namespace=default", "--check-jobs-managed-by="+checkJobsManager,
		"--score-taint-bronze="+strconv.FormatBool(!r.opts.NoFeedback))
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.controllers[i] = p
	r.started = append(r.started, p)
	r.mu.Unlock()
	r.supervise(p, func() error { return r.startController(i) })
	return nil
}

func (r *run) stopProcesses() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping = true
	return procs.StopAll([]*procs.Process{r.fleet, r.controllers[0], r.controllers[1]}, 30*time.Second)
}

// healAll undoes whatever chaos left: the API server runs, the provider
// answers and the audit disk has room. Processes that are down come back
// through their supervisors.
func (r *run) healAll(_ context.Context) error {
	errs := []error{r.env.ResumeAPIServer(), os.Remove(r.chaosFile())}
	if errors.Is(errs[1], os.ErrNotExist) {
		errs[1] = nil
	}
	r.mu.Lock()
	controllers := r.controllers
	r.mu.Unlock()
	for _, p := range controllers {
		if p != nil {
			_ = setFileSizeLimit(p.PID(), unix.RLIM_INFINITY) // a down replica restarts unlimited
		}
	}
	return errors.Join(errs...)
}

// setFileSizeLimit sets RLIMIT_FSIZE of a running process: a write beyond
// the limit fails with EFBIG, as a full disk makes writes fail (Go ignores
// the SIGXFSZ that comes with it).
func setFileSizeLimit(pid int, limit uint64) error {
	return unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: unix.RLIM_INFINITY}, nil)
}
