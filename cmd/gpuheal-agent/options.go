package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent"
	"github.com/gpuheal/gpuheal/internal/agent/predictor"
	"github.com/gpuheal/gpuheal/internal/flagenv"
	"github.com/gpuheal/gpuheal/internal/logging"
	"github.com/gpuheal/gpuheal/internal/podresources"
	"github.com/gpuheal/gpuheal/internal/simfleet"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// options is everything gpuheal-agent can be told: one agent's, and the
// sim fleet's (whose agents all run with the agent options but the node).
type options struct {
	agent agent.Options
	fleet simfleet.Options
}

// parseOptions reads flags, then GPUHEAL_* variables for flags not given,
// and validates once. --help prints the usage to usage.
func parseOptions(args []string, usage io.Writer) (*options, logging.Options, error) {
	opts := &options{}
	o, fleet := &opts.agent, &opts.fleet
	var checkConfig string
	var lo logging.Options
	fs := pflag.NewFlagSet("gpuheal-agent", pflag.ContinueOnError)
	fs.StringVar(&lo.Format, "log-format", "json", "log format: json or text")
	fs.StringVar(&lo.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.NodeName, "node-name", "", "this node's name (downward API spec.nodeName)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig path (default: in-cluster, then $KUBECONFIG)")
	fs.StringVar(&o.Backend, "gpu-backend", agent.BackendAuto, "how to read GPUs: auto (nvml, then smi), nvml, smi or sim (the simulator, for tests and the demo)")
	fs.StringVar(&o.SMIPath, "nvidia-smi-path", "nvidia-smi", "nvidia-smi binary for the smi backend")
	fs.DurationVar(&o.CallTimeout, "call-timeout", 2*time.Second, "time box of one GPU query (a failing GPU can block NVML for seconds)")
	fs.DurationVar(&o.ReadyThreshold, "ready-threshold", agent.DefaultReadyThreshold, "/readyz fails once reading the GPUs or writing the Node has failed for longer than this")
	fs.IntVar(&o.ExpectedGPUs, "expected-gpus", 0, "GPUs this node should have when the Node names no count: the largest of the Karpenter or EKS instance-gpu-count label, nvidia.com/gpu.count and the instance type wins over it (0: unknown)")
	fs.StringVar(&o.HostRoot, "host-root", "/", "where the host's / is mounted (for /proc/driver/nvidia and /dev/nvidia*)")
	fs.StringVar(&o.DriverRoot, "driver-root", "/", "where the NVIDIA driver's files are, for libnvidia-ml.so.1: / for the dynamic loader's search, or a driver tree such as /run/nvidia/driver")
	fs.StringVar(&o.KmsgPath, "kmsg-path", "/dev/kmsg", "kernel log: \"syslog\" (the ring buffer through syslog(2), needs only CAP_SYSLOG), the /dev/kmsg device, or a file to follow (\"\" turns the monitor off)")
	fs.DurationVar(&o.KmsgPoll, "kmsg-poll-interval", 200*time.Millisecond, "how often a followed kernel-log file or the syslog(2) ring is checked (the device needs no polling)")
	fs.BoolVar(&o.Fabric, "fabric", true, "read the node's RDMA devices (InfiniBand, RoCE, EFA) from sysfs every interval: metrics and the network condition")
	fs.StringVar(&o.SysfsPath, "sysfs", "", "where the host's sysfs is mounted (default: --host-root's sys)")
	fs.IntVar(&o.ExpectedRDMADevices, "expected-rdma-devices", 0, "RDMA devices this node should have; when set it wins over the instance type's count, which is the most the type takes (0: the instance type's, else unknown)")
	fs.StringVar(&o.FabricManagerLog, "fabric-manager-log", "", "NVIDIA Fabric Manager's log file to follow for NVSwitch and NVLink failures, e.g. /var/log/fabricmanager.log under --host-root (empty: off)")
	fs.StringVar(&o.PodResourcesSocket, "pod-resources-socket", podresources.DefaultSocket, "the kubelet's pod-resources socket, read for the pods that hold a faulty GPU (\"\": off, and a repair drains the whole node)")
	fs.StringVar(&o.StateDir, "state-dir", "/var/lib/gpuheal", "where the agent keeps its kernel-log position across restarts")
	fs.StringVar(&o.XidConfig, "xid-config", "", "YAML file of Xid catalog overrides (severity, action, count, window per code)")
	fs.StringVar(&o.ConfigFile, "config", "", "health rules YAML (default: the built-in rules); reloaded when it changes")
	fs.StringVar(&o.ConditionTypes, "condition-types", v1alpha1.ConditionTypesGPUHeal, "names of the GPU, kernel and network node conditions: gpuheal ("+v1alpha1.ConditionGPUHealAcceleratorHealthy+", "+v1alpha1.ConditionGPUHealKernelHealthy+", "+v1alpha1.ConditionGPUHealNetworkingHealthy+"; only gpuheal acts on them) or eks ("+v1alpha1.ConditionAcceleratedHardwareReady+", "+v1alpha1.ConditionKernelReady+", "+v1alpha1.ConditionNetworkingReady+": EKS node auto repair and Karpenter repair act on them)")
	fs.StringVar(&checkConfig, "check-config", "", "validate a health rules file and exit (0 valid, 1 not)")
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "collection interval")
	fs.StringVar(&o.MetricsAddress, "metrics-address", ":9400", "address of the Prometheus /metrics endpoint")
	fs.DurationVar(&o.AgentChecksInterval, "agent-checks-interval", 30*time.Second, "the health gate's checks report (node annotation "+v1alpha1.AnnotationAgentChecks+") is rewritten when a result changes and at least this often (0: no report)")
	fs.BoolVar(&o.JoinGate, "join-gate", false, "taint a node that has never passed the health gate (no "+v1alpha1.AnnotationValidatedAt+" annotation) with "+v1alpha1.TaintValidating+":NoSchedule on the agent's first write; the controller removes it when the checks pass")
	fs.StringVar(&o.PushGateway, "push-gateway", "", "Prometheus Pushgateway URL to push metrics to (optional)")
	fs.DurationVar(&o.PushInterval, "push-interval", 30*time.Second, "how often to push to the Pushgateway")
	fs.IntVar(&o.GCPercent, "gc-percent", defaultGCPercent, "garbage collector target percentage, as GOGC (which wins when set)")
	fs.BoolVar(&o.ReturnMemory, "return-memory", true, "after each collection, return the memory it freed to the OS at once (a forced GC per interval)")
	fs.BoolVar(&o.Standalone, "standalone", false, "run without Kubernetes: serve metrics only")
	fs.BoolVar(&o.Once, "once", false, "with --standalone: print one snapshot and exit")
	fs.StringVarP(&o.Output, "output", "o", "text", "snapshot format for --once: json or text")
	fs.StringVar(&o.Predictor.Mode, "predictor", predictor.On, "failure predictor: on (risk metric, node annotation "+v1alpha1.AnnotationFailureRisk+", warning Event; it never starts a repair) or off")
	fs.StringVar(&o.Predictor.ModelFile, "predictor-model", "", "failure predictor model file (default: the model shipped with gpuheal)")
	fs.Float64Var(&o.Predictor.Threshold, "predictor-threshold", 0, "risk in (0,1] at which the predictor warns (default 0: the model's own threshold)")
	fs.IntVar(&o.Sim.GPUs, "sim-gpus", 8, "sim backend: number of GPUs (1-8)")
	fs.StringVar(&o.Sim.Model, "sim-model", "H100-80GB-HBM3", "sim backend: GPU model")
	fs.Int64Var(&o.Sim.Seed, "sim-seed", 1, "sim backend: seed of the simulated values")
	fs.StringVar(&o.Sim.ScheduleFile, "sim-schedule", "", "sim backend: YAML fault schedule")
	fs.StringVar(&o.Sim.KernelLogFile, "sim-kernel-log", "", "sim backend: append the simulated kernel log (raw /dev/kmsg records) to this file")
	fs.BoolVar(&fleet.Enabled, "sim-fleet", false, "run one simulated agent per GPU node of the cluster in this process (demo, soak); needs --gpu-backend sim")
	fs.StringVar(&fleet.NodeSelector, "sim-fleet-node-selector", v1alpha1.LabelNvidiaGPUPresent+"=true", "sim fleet: label selector of the nodes that get an agent")
	fs.StringVar(&fleet.Dir, "sim-fleet-dir", "", "sim fleet: directory for the simulated kernel logs (default: a temporary one)")
	fs.Float64Var(&fleet.FaultsPerMinute, "sim-fleet-faults-per-minute", 0, "sim fleet: mean rate of faults drawn from the published failure mix (0: none)")
	fs.Int64Var(&fleet.Seed, "sim-fleet-seed", 1, "sim fleet: seed of the fault draws")
	fs.DurationVar(&fleet.Resync, "sim-fleet-resync", 2*time.Second, "sim fleet: how often nodes are listed to start and stop agents")
	fs.StringVar(&fleet.ScheduleFile, "sim-fleet-schedule", "", "sim fleet: fault schedule (JSON lines: at, slot, class, gpu), run from --sim-fleet-epoch")
	fs.StringVar(&fleet.Fabric, "sim-fleet-fabric", simfleet.FabricAuto, "sim fleet: the nodes' RDMA fabric: auto (their instance type's EFA devices, else 8 ConnectX InfiniBand HCAs), infiniband, efa (a p5's 32) or none")
	epoch := fs.String("sim-fleet-epoch", "", "sim fleet: when the schedule starts, RFC 3339 (default: now); a restarted fleet goes on from its journal")
	// Latent faults and the health gate's check Jobs (docs/health-gate.md, "Simulation").
	fs.DurationVar(&fleet.LatentSurfaceAfter, "sim-fleet-latent-surface-after", 0, "sim fleet: workload time after which a planted latent fault surfaces as a fatal one (default: the class's, "+schedule.LatentSurfaceAfter+")")
	fs.BoolVar(&fleet.AnswerChecks, "sim-fleet-answer-checks", true, "sim fleet: play the Job controller and the kubelet for the health gate's check Jobs on its nodes")
	fs.StringVar(&fleet.CheckJobsManagedBy, "sim-fleet-check-jobs-managed-by", "", "sim fleet: answer only check Jobs with this spec.managedBy (default: every check Job; for clusters without a Job controller)")
	fs.StringVar(&fleet.CheckNamespace, "sim-fleet-check-namespace", "", "sim fleet: answer check Jobs of this namespace only (default: all)")
	fs.DurationVar(&fleet.CheckPoll, "sim-fleet-check-poll", time.Second, "sim fleet: how often check Jobs are listed")
	checkDurations := fs.StringToString("sim-fleet-check-durations", nil, "sim fleet: simulated run time per check kind, e.g. DCGM=3m,NCCL=1m,NVBandwidth=1m (the defaults)")
	fs.Float64Var(&fleet.CheckSpeed, "sim-fleet-check-speed", 1, "sim fleet: pace of the simulated checks (2: they take half their durations)")
	hideSimFlags(fs)
	flagenv.Usage(fs)
	fs.SetOutput(usage)
	if err := fs.Parse(args); err != nil {
		return nil, lo, err
	}
	if err := flagenv.Apply(fs, nil); err != nil {
		return nil, lo, err
	}
	if fs.NArg() > 0 {
		return nil, lo, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := logging.ParseLevel(lo.Level); err != nil {
		return nil, lo, err
	}
	if checkConfig != "" {
		return nil, lo, &checkConfigRequest{path: checkConfig}
	}
	var err error
	if fleet.CheckDurations, err = simfleet.ParseCheckDurations(*checkDurations); err != nil {
		return nil, lo, err
	}
	validate := o.Validate
	if fleet.Enabled {
		validate = func() error { return fleet.Validate(*o) }
	}
	if err := validate(); err != nil {
		return nil, lo, err
	}
	if *epoch != "" {
		t, err := time.Parse(time.RFC3339Nano, *epoch)
		if err != nil {
			return nil, lo, fmt.Errorf("--sim-fleet-epoch %q: want RFC 3339: %w", *epoch, err)
		}
		fleet.Epoch = t
	}
	return opts, lo, nil
}

// hideSimFlags keeps the simulator's flags (the sim backend's GPUs and
// fault schedule, the sim fleet of the demo and the soak) out of --help,
// which is for operators of real nodes; they still parse, and the
// environment still sets them.
func hideSimFlags(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "sim-") {
			f.Hidden = true
		}
	})
}

// checkConfigRequest is --check-config: main validates the file and exits
// instead of running the agent.
type checkConfigRequest struct{ path string }

func (c *checkConfigRequest) Error() string { return "--check-config " + c.path }
