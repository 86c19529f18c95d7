package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

type demoOptions struct {
	nodes       int
	speed       float64
	seed        int64
	binDir      string
	workDir     string
	metricsAddr string
	agentAddr   string
	verbose     bool
	// faultsPerMinute overrides the pace's rate of drawn faults when it
	// is 0 or more.
	faultsPerMinute float64
}

func newDemoCommand(out io.Writer) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo [--nodes 32] [--speed 1]",
		Short: "A local GPU fleet that fails and heals itself, live, until Ctrl-C",
		Long: `Starts the real control plane (kube-apiserver, etcd, kube-controller-manager,
kube-scheduler) with kwok and a fleet of fake 8-GPU nodes, runs training
workloads with PodDisruptionBudgets on it, one simulated gpuheal-agent per node
(gpuheal-agent --sim-fleet) injecting faults drawn from the Llama 3 paper's
failure mix, and gpuheal-controller with the kwok provider under a live
RemediationPolicy. It prints every detection, cordon, drain, reboot and
replacement as it happens, with each incident's time to recover, and the URLs
of the metrics and the status page. Ctrl-C stops everything.

A repaired node passes the health gate before it takes work again: the agent's
checks and a simulated NCCL all-reduce, each printed with its value. Node
gpu-node-0001 carries a latent NCCL fault from the start that only the gate
finds: its GPU falls off the bus, the reboot clears what the agent sees, the
all-reduce falls short of its floor and the node is replaced.

One node runs an inference service of one-GPU pods. A double-bit ECC
error on one of its GPUs is repaired by resetting that GPU alone: the
agent knows from the kubelet's PodResources which pod holds it, only that
pod is evicted, the node stays schedulable and the GPU is back in seconds.

Node gpu-node-0002 is an on-premises HGX node on InfiniBand whose rail-3
cable flaps: the agent counts the port's link_downed, the network condition
goes False, and the node is replaced (a reboot would keep the bad cable).

One more node, a lemon, gets a GPU that falls off the bus each time it is
back in service. The first fault is cured by a reboot; at the second the
policy's lemon rule (2 hardware incidents of one machine within 720h; the
default is 3) replaces the node instead of rebooting it again.

--speed scales the pace: faults per minute, boot times and how long a
condition must hold before a repair all scale by it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.nodes < 4 || o.nodes > 2000 {
				return fmt.Errorf("--nodes %d: want 4 to 2000", o.nodes)
			}
			if o.speed <= 0 || o.speed > 60 {
				return fmt.Errorf("--speed %v: want more than 0 and at most 60", o.speed)
			}
			return runDemo(cmd.Context(), out, o)
		},
	}
	cmd.Flags().IntVar(&o.nodes, "nodes", 32, "fake GPU nodes in the fleet")
	cmd.Flags().Float64Var(&o.speed, "speed", 1, "pace: 1 is a few incidents a minute with 30 s reboots and 90 s boots; 2 is twice as fast")
	cmd.Flags().Int64Var(&o.seed, "seed", 1, "seed of the fault draws")
	cmd.Flags().Float64Var(&o.faultsPerMinute, "faults-per-minute", -1, "mean rate of the faults drawn from the failure mix (default: 1.5 a minute per 32 nodes, times --speed; 0: only the planted ones)")
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "", "directory with the control plane and gpuheal binaries (default: $GPUHEAL_BIN_DIR or <repo>/bin)")
	cmd.Flags().StringVar(&o.workDir, "work-dir", "", "where the kubeconfig, logs and audit log go (default: a temporary directory removed on exit)")
	cmd.Flags().StringVar(&o.metricsAddr, "controller-address", "127.0.0.1:8080", "the controller's metrics, audit API and status page")
	cmd.Flags().StringVar(&o.agentAddr, "agent-address", "127.0.0.1:9400", "the sim fleet's metrics (/metrics, /nodes/NODE/metrics)")
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "show the control plane's own logs")
	return cmd
}

// demoPace is what --speed sets.
type demoPace struct {
	faultsPerMinute float64
	holdFor         time.Duration // how long a condition must hold before repair
	recoveryHold    time.Duration // how long a repaired node must stay healthy
	rebootDelay     time.Duration
	bootDelay       time.Duration
	agentChecks     time.Duration // how often an agent rewrites its checks report
	lemonWait       time.Duration // how long the lemon node may take to come back
}

func paceFor(nodes int, speed float64) demoPace {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speed).Round(time.Second) }
	// One and a half incidents a minute on 32 nodes, growing with the
	// fleet so that a bigger demo is as busy per node. A repair takes about
	// 80 s at speed 1 and 10% of the fleet may be in repair at once, so
	// repairs keep up and the breaker stays closed unless faults bunch up.
	return demoPace{
		faultsPerMinute: 1.5 * speed * float64(nodes) / 32,
		holdFor:         max(scale(20*time.Second), time.Second),
		recoveryHold:    max(scale(30*time.Second), time.Second),
		rebootDelay:     max(scale(30*time.Second), time.Second),
		bootDelay:       max(scale(90*time.Second), time.Second),
		agentChecks:     max(scale(10*time.Second), time.Second),
		lemonWait:       max(scale(15*time.Minute), 3*time.Minute),
	}
}

func runDemo(ctx context.Context, out io.Writer, o *demoOptions) (err error) {
	log := logger()
	binDir := o.binDir
	if binDir == "" {
		if binDir, err = testenv.BinDir(); err != nil {
			return err
		}
	}
	ownDir, err := gpuhealBinDir(binDir)
	if err != nil {
		return err
	}
	workDir := o.workDir
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "gpuheal-demo-"); err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(workDir) }()
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return err
	}
	pace := paceFor(o.nodes, o.speed)
	if o.faultsPerMinute >= 0 {
		pace.faultsPerMinute = o.faultsPerMinute
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gpuhealv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	var procOut io.Writer
	if o.verbose {
		procOut = os.Stderr
	}
	start := time.Now()
	log.Info("starting the control plane: kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok")
	env, err := testenv.Start(ctx, testenv.Options{BinDir: binDir, Kwok: true, Workloads: true, Scheme: scheme,
		WorkDir: filepath.Join(workDir, "cluster"), Output: procOut})
	if err != nil {
		return err
	}
	defer func() {
		log.Info("stopping the control plane")
		err = errors.Join(err, env.Stop())
	}()
	log.Info("control plane ready", "after", time.Since(start).Round(time.Millisecond))

	planted, err := seedDemoCluster(ctx, env.Client, o.nodes, pace)
	if err != nil {
		return err
	}
	log.Info("fleet and workloads running", "nodes", o.nodes, "after", time.Since(start).Round(time.Millisecond))

	schedulePath := filepath.Join(workDir, "schedule.jsonl")
	if err := writeDemoSchedule(schedulePath, planted); err != nil {
		return err
	}
	running, err := startDemoProcesses(ownDir, workDir, env.Kubeconfig, schedulePath, o, pace)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, running.stop()) }()

	fmt.Fprintf(out, `
gpuheal demo: %d GPU nodes, %.1f faults/min, repair after %s, reboot %s, boot %s
  kubeconfig     %s
  status page    http://%s/status/
  controller     http://%s/metrics   (audit: gpuheal incidents --controller-url http://%s)
  agents         http://%s/metrics   (one node: http://%s/nodes/%s/metrics)
  lemon          %s gets a GPU fault each time it is back in service; the policy
                 retires a machine at its %s hardware incident within %s (the default: 3rd)
  logs           %s
  try            gpuheal status --kubeconfig %s --watch
Ctrl-C stops everything.

`, o.nodes, pace.faultsPerMinute, pace.holdFor, pace.rebootDelay, pace.bootDelay, env.Kubeconfig,
		o.metricsAddr, o.metricsAddr, o.metricsAddr, o.agentAddr, o.agentAddr, testenv.NodeName(demoNodePrefix, 0),
		planted.lemon, ordinal(demoLemonIncidents), shortDuration(demoLemonWindow.String()), workDir, env.Kubeconfig)

	now := time.Now()
	view := newDemoView(env.Client, out, now)
	view.lemon = newLemonPlanter(planted.lemon, o.agentAddr, now, pace.lemonWait)
	return view.run(ctx, running.exited)
}

const (
	demoNodePrefix = "gpu-node"
	demoNamespace  = "training"
	demoPolicy     = "demo"
)

// The inference service that shares one node: demoInferencePods one-GPU
// pods. A contained double-bit error on its GPU demoResetGPU is repaired
// by resetting that GPU alone: only the pod on it moves, and the node
// keeps serving the others.
const (
	demoInference     = "inference"
	demoInferencePods = 4
	demoResetGPU      = 1
)

// demoPlanted are the nodes of the planted faults that depend on where
// the scheduler put the training jobs: the inference service's node (its
// GPU is reset), the on-premises node whose cable flaps, and the lemon, a
// node none of the others is, which fails each time it is back.
type demoPlanted struct{ reset, fabric, lemon string }

// seedDemoCluster creates the fleet, two training jobs that fill most of
// it (one pod per node, 8 GPUs each, one pod at a time may be disrupted),
// the inference service on the first node they left free, the
// on-premises node, and the live policy.
func seedDemoCluster(ctx context.Context, c client.Client, nodes int, pace demoPace) (demoPlanted, error) {
	// The jobs prefer healthier nodes: a pod a drain moves goes to a gold
	// node where one has room (docs/health-score.md).
	if err := testenv.TrainingFleet(ctx, c, demoNodePrefix, nodes, demoNamespace, tieraffinity.PreferHealthier(), "llm-pretrain", "llm-finetune"); err != nil {
		return demoPlanted{}, err
	}
	node, err := freeDemoNode(ctx, c, nodes)
	if err != nil {
		return demoPlanted{}, err
	}
	planted := demoPlanted{reset: node, fabric: demoFabricSlot}
	if planted.fabric == node {
		// A small fleet left only it free: the next node is on-premises.
		planted.fabric = testenv.NodeName(demoNodePrefix, 3)
	}
	planted.lemon = lemonDemoNode(nodes, planted)
	if err := onPremises(ctx, c, planted.fabric); err != nil {
		return demoPlanted{}, err
	}
	if err := testenv.CreateGPUWorkloadOn(ctx, c, demoNamespace, demoInference, demoInferencePods, 1, node); err != nil {
		return demoPlanted{}, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := testenv.WaitWorkloadRunning(waitCtx, c, demoNamespace, demoInference, demoInferencePods); err != nil {
		return demoPlanted{}, err
	}
	return planted, c.Create(ctx, demoRemediationPolicy(pace))
}

// freeDemoNode is the first node that runs no training pod and is not the
// latent-fault node, and not demoFabricSlot while another one is free.
func freeDemoNode(ctx context.Context, c client.Client, nodes int) (string, error) {
	free, err := testenv.NodesWithoutPods(ctx, c, demoNodePrefix, nodes, demoNamespace)
	if err != nil {
		return "", err
	}
	free = slices.DeleteFunc(free, func(name string) bool { return name == demoLatentSlot })
	if len(free) == 0 {
		return "", fmt.Errorf("no node of %d is free of training pods for the inference service", nodes)
	}
	if i := slices.IndexFunc(free, func(name string) bool { return name != demoFabricSlot }); i >= 0 {
		return free[i], nil
	}
	return free[0], nil
}

// lemonDemoNode is the last node that has no other planted fault; --nodes
// is at least 4, so one is left.
func lemonDemoNode(nodes int, planted demoPlanted) string {
	for i := nodes - 1; i >= 0; i-- {
		if name := testenv.NodeName(demoNodePrefix, i); !slices.Contains([]string{demoLatentSlot, planted.fabric, planted.reset}, name) {
			return name
		}
	}
	return ""
}

func ordinal(n int) string {
	switch n {
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(n) + "th"
}

// demoMaxUnhealthyPercent is the demo policy's maxUnhealthy.
const demoMaxUnhealthyPercent = 20

// demoRemediationPolicy is live (not dry run): the demo is there to show
// repairs. 10% at a time, so that drains of both jobs meet their PDBs.
func demoRemediationPolicy(pace demoPace) *gpuhealv1.RemediationPolicy {
	parallel := intstr.FromString("10%")
	twenty := intstr.FromString(strconv.Itoa(demoMaxUnhealthyPercent) + "%")
	timeout := metav1.Duration{Duration: 5 * time.Minute}
	hold := metav1.Duration{Duration: pace.holdFor}
	return &gpuhealv1.RemediationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: demoPolicy},
		Spec: gpuhealv1.RemediationPolicySpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{gpuhealv1.LabelNvidiaGPUPresent: "true"}},
			UnhealthyConditions: []gpuhealv1.UnhealthyCondition{
				{Type: gpuhealv1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, For: hold},
				{Type: gpuhealv1.ConditionGPUHealKernelHealthy, Status: metav1.ConditionFalse, For: hold},
				{Type: gpuhealv1.ConditionGPUHealNetworkingHealthy, Status: metav1.ConditionFalse, For: hold},
			},
			MaxUnhealthy: &twenty,
			MaxParallel:  &parallel,
			Drain:        gpuhealv1.DrainSpec{Timeout: &timeout},
			Provider:     "kwok",
			RecoveryHold: &metav1.Duration{Duration: pace.recoveryHold},
			// The health gate: a repaired node proves its GPUs under load
			// before it takes work again (docs/health-gate.md).
			Validation: testenv.HealthGate(),
			// The repeat offender is retired at its second incident,
			// so the demo shows it within minutes (lemonPlanter).
			Lemon: gpuhealv1.LemonSpec{Incidents: ptr.To[int32](demoLemonIncidents), Window: &metav1.Duration{Duration: demoLemonWindow},
				Action: gpuhealv1.LemonReplace},
		},
	}
}

// demoFabricSlot is the fleet's one on-premises HGX node (the next one
// when a small fleet leaves only it free for the inference service): no
// EFA instance type, so its simulated fabric is 8 ConnectX InfiniBand
// HCAs, and the cable on its rail 3 flaps from the start, every 10 s. The network condition takes it out
// and the node is replaced (a reboot keeps a bad cable).
var demoFabricSlot = testenv.NodeName(demoNodePrefix, 2)

// demoLatentSlot is the node that carries a latent NCCL fault from the
// start: its GPU falls off the bus, the reboot heals what the agent sees,
// and the gate's NCCL check finds what it does not, so the node is
// replaced instead of going back to work.
var demoLatentSlot = testenv.NodeName(demoNodePrefix, 1)

// writeDemoSchedule plants those faults for the sim fleet (the random mix
// goes on beside them): the latent one, the flapping cable, and first a
// double-bit error on the inference node's GPU demoResetGPU.
func writeDemoSchedule(path string, planted demoPlanted) error {
	return schedule.WriteSchedule(path, []schedule.ScheduledFault{
		{At: 0, Slot: demoLatentSlot, Class: "latent-nccl-bandwidth", GPU: 3},
		// From the start, so the mix draws no other fault on the node
		// (it draws only on nodes without one).
		{At: 0, Slot: planted.fabric, Class: "network-cable-flapping-fast", GPU: 3},
		// Once the agents have taken their first snapshot: a kernel-log
		// line that comes before it names a GPU the agent does not know
		// yet, whose pods it cannot tell, and the reset becomes a reboot.
		{At: 5 * time.Second, Slot: planted.reset, Class: "hbm3-dbe", GPU: demoResetGPU},
		// After the reset has ended at every --speed up to 8, so that a
		// small demo's breaker (20% of 8 nodes is one) does not hold it.
		{At: demoLatentAt, Slot: demoLatentSlot, Class: "faulty-gpu", GPU: 3},
	})
}

// demoLatentAt is when the latent node's GPU falls off the bus.
const demoLatentAt = 15 * time.Second

func formatRate(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// gpuhealBinDir is where gpuheal-agent and gpuheal-controller are: beside
// this gpuheal binary (an install, or a test's build directory), else in
// the control plane's directory (make build puts all in bin/).
func gpuhealBinDir(binDir string) (string, error) {
	dirs := []string{binDir}
	if exe, err := os.Executable(); err == nil {
		dirs = append([]string{filepath.Dir(exe)}, dirs...)
	}
	for _, dir := range dirs {
		if isFile(filepath.Join(dir, "gpuheal-agent")) && isFile(filepath.Join(dir, "gpuheal-controller")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("gpuheal-agent and gpuheal-controller not found in %v: run `make build` (or `make demo`)", dirs)
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// onPremises takes the instance type off a node, which makes it an
// on-premises HGX node to the sim fleet (InfiniBand rather than EFA) and
// to the agent (no RDMA device count known: a port is judged once it has
// been up).
func onPremises(ctx context.Context, c client.Client, node string) error {
	patch := []byte(`{"metadata":{"labels":{"` + corev1.LabelInstanceTypeStable + `":null}}}`)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("taking the instance type off node %s: %w", node, err)
	}
	return nil
}
