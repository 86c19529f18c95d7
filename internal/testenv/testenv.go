// Package testenv runs a real Kubernetes control plane for tests and the
// demo: etcd + kube-apiserver through controller-runtime's envtest, our CRDs,
// and optionally kwok managing fake GPU nodes. The binaries are built from the
// Go module proxy by hack/build-controlplane.sh.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gpuheal/gpuheal/internal/procs"
)

// Options configures an environment.
type Options struct {
	// BinDir holds kube-apiserver, etcd, kwok and kwok-stages.yaml;
	// empty means BinDir().
	BinDir string
	// CRDDir holds our CRD manifests; empty means <repo>/charts/gpuheal/crds
	// when that exists. CRDs are installed only when the directory has some.
	CRDDir string
	// Kwok starts kwok to manage nodes annotated kwok.x-k8s.io/node=fake.
	Kwok bool
	// Workloads starts kube-controller-manager and kube-scheduler, so that
	// Deployments get pods, pods get nodes and PodDisruptionBudgets get
	// their status, as in a real cluster (the demo, the soak test).
	Workloads bool
	// Scheme for the client; nil means client-go's scheme.
	Scheme *runtime.Scheme
	// Output receives the processes' logs; nil discards them.
	Output io.Writer
	// APIAuditLog, when set, is where kube-apiserver writes an audit log
	// (JSON lines) of every pod eviction and pod deletion: the evidence
	// the soak test checks PodDisruptionBudgets against.
	APIAuditLog string
	// WorkDir holds the kubeconfig and kwok's files; empty means a
	// temporary directory removed by Stop.
	WorkDir string
}

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	// Kubeconfig is the path of an admin kubeconfig for kubectl and
	// out-of-process clients (kwok, the agent, the controller).
	Kubeconfig string

	binDir  string
	workDir string
	ownDir  bool
	env     *envtest.Environment
	// output receives kwok's and the workload controllers' logs.
	output io.Writer
	kwok   *procs.Process
	// workloads are kube-controller-manager and kube-scheduler.
	workloads []*procs.Process

	stopOnce sync.Once
	stopErr  error
}

// Start brings up etcd and kube-apiserver (and kwok when asked). The caller
// must call Stop; on error everything already started is stopped.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	reapOrphans()
	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = BinDir(); err != nil {
			return nil, err
		}
	}
	if missing := MissingBinaries(binDir, opts.Kwok, opts.Workloads); len(missing) > 0 {
		return nil, &MissingBinariesError{Dir: binDir, Missing: missing}
	}
	e := &Env{binDir: binDir, workDir: opts.WorkDir, output: opts.Output}
	if e.output == nil {
		e.output = io.Discard
	}
	if e.workDir == "" {
		if e.workDir, err = os.MkdirTemp("", "gpuheal-testenv-"); err != nil {
			return nil, err
		}
		e.ownDir = true
	} else if err := os.MkdirAll(e.workDir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	scheme := opts.Scheme
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	e.env = &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if dir := crdDir(opts.CRDDir); dir != "" {
		e.env.CRDDirectoryPaths = []string{dir}
		e.env.ErrorIfCRDPathMissing = true
	}
	if opts.APIAuditLog != "" {
		policy := filepath.Join(e.workDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(podRemovalAuditPolicy), 0o644); err != nil {
			return nil, err
		}
		e.env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", opts.APIAuditLog).
			Set("audit-log-format", "json").
			Set("audit-log-mode", "blocking")
	}
	if opts.Output != nil {
		e.env.ControlPlane.GetAPIServer().Out = opts.Output
		e.env.ControlPlane.GetAPIServer().Err = opts.Output
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", binDir, err)
	}
	_ = recordChildren(binDir)
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	if e.Kubeconfig, err = e.writeKubeconfig(); err != nil {
		return nil, err
	}
	if opts.Kwok {
		if e.kwok, err = startKwok(ctx, binDir, e.Kubeconfig, e.workDir, e.output); err != nil {
			return nil, err
		}
		_ = recordChildren(binDir)
	}
	if opts.Workloads {
		if e.workloads, err = startWorkloadControllers(ctx, binDir, e.Kubeconfig, e.workDir, e.output); err != nil {
			return nil, err
		}
		_ = recordChildren(binDir)
	}
	return e, nil
}

// writeKubeconfig creates an admin user and stores its kubeconfig.
func (e *Env) writeKubeconfig() (string, error) {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: "gpuheal-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering kubeconfig: %w", err)
	}
	path := filepath.Join(e.workDir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing kubeconfig: %w", err)
	}
	return path, nil
}

// Stop stops kwok, kube-apiserver and etcd, and removes the work directory
// it created. It is safe to call more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		var errs []error
		for _, p := range e.workloads {
			errs = append(errs, stopChild(p))
		}
		errs = append(errs, stopChild(e.kwok))
		if e.env != nil && e.Config != nil {
			errs = append(errs, e.env.Stop())
		}
		forgetChildren()
		if e.ownDir {
			errs = append(errs, os.RemoveAll(e.workDir))
		}
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

// WorkDir is where the kubeconfig and kwok's files live.
func (e *Env) WorkDir() string { return e.workDir }

func crdDir(dir string) string {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return ""
		}
		root, err := RepoRoot(wd)
		if err != nil {
			return ""
		}
		dir = filepath.Join(root, "charts", "gpuheal", "crds")
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(matches) == 0 {
		return ""
	}
	return dir
}

// MissingBinariesError says which control-plane files are absent.
type MissingBinariesError struct {
	Dir     string
	Missing []string
}

func (e *MissingBinariesError) Error() string {
	return fmt.Sprintf("control-plane binaries missing from %s: %v; %s", e.Dir, e.Missing, BuildHint)
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PauseAPIServer stops the kube-apiserver process (SIGSTOP) until
// ResumeAPIServer: to every client it is an API server that accepts
// connections and answers nothing, the way a partitioned or overloaded
// control plane looks. etcd keeps running.
func (e *Env) PauseAPIServer() error { return e.signalAPIServer(syscall.SIGSTOP) }

// ResumeAPIServer lets a paused kube-apiserver run again (SIGCONT).
func (e *Env) ResumeAPIServer() error { return e.signalAPIServer(syscall.SIGCONT) }

// RestartKwok stops kwok and starts it again on the same cluster; it
// re-lists every node and pod and plays their stages afresh. After an API
// server outage this is what a fleet of real kubelets amounts to: kwok
// v0.8.0 retries a failed stage only on connection refused or an API
// status error (pkg/kwok/controllers/utils.go, shouldRetry), so a request
// that timed out against a paused server drops that node's heartbeats, or
// a pod's Ready, for good, where a kubelet would keep trying.
func (e *Env) RestartKwok(ctx context.Context) error {
	if e.kwok == nil {
		return errors.New("this environment runs no kwok")
	}
	if err := stopChild(e.kwok); err != nil {
		return err
	}
	p, err := startKwok(ctx, e.binDir, e.Kubeconfig, e.workDir, e.output)
	if err != nil {
		return err
	}
	e.kwok = p
	_ = recordChildren(e.binDir)
	return nil
}

// signalAPIServer signals this environment's kube-apiserver, told from the
// others of the process (tests run in parallel) by its secure port.
func (e *Env) signalAPIServer(sig syscall.Signal) error {
	want := filepath.Join(e.binDir, "kube-apiserver")
	port := "--secure-port=" + e.env.ControlPlane.GetAPIServer().SecureServing.Port
	for _, c := range childrenRunning(e.binDir) {
		if c.exe != want {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.pid), "cmdline"))
		if err == nil && slices.Contains(strings.Split(string(cmdline), "\x00"), port) {
			return syscall.Kill(c.pid, sig)
		}
	}
	return fmt.Errorf("no kube-apiserver child of this process runs from %s with %s", e.binDir, port)
}

// podRemovalAuditPolicy logs evictions and pod deletions, once each, when
// the response is known; nothing else.
const podRemovalAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  verbs: [create]
  resources: [{group: "", resources: [pods/eviction]}]
- level: Metadata
  verbs: [delete, deletecollection]
  resources: [{group: "", resources: [pods]}]
- level: None
`
