// Package agent wires gpuheal-agent: it picks a GPU backend, collects a
// snapshot every interval (GPU backend + host probes), serves the last one as
// Prometheus metrics, and, inside a cluster, reads its own Node.
package agent

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/predictor"
)

// Backends the agent can read GPUs through.
const (
	BackendAuto = "auto"
	BackendNVML = "nvml"
	BackendSMI  = "smi"
	BackendSim  = "sim"
)

// Options is everything gpuheal-agent can be told; cmd/gpuheal-agent fills
// it from flags and GPUHEAL_* variables, and Validate checks it once.
type Options struct {
	NodeName   string
	Kubeconfig string

	Backend     string
	SMIPath     string
	CallTimeout time.Duration
	// ReadyThreshold: /readyz fails once reading the GPUs or writing the
	// Node has failed for longer (0: DefaultReadyThreshold).
	ReadyThreshold time.Duration
	ExpectedGPUs   int
	// HostRoot is where the host's / is mounted (for /proc/driver/nvidia,
	// /dev/nvidia*); "/" outside a container.
	HostRoot string
	// DriverRoot is where the NVIDIA driver's user-space files are, for
	// the nvml backend's libnvidia-ml.so.1: "/" leaves the search to the
	// dynamic loader (a driver on the host, or one a container toolkit
	// injected); another directory, such as the GPU Operator's
	// /run/nvidia/driver, is searched in its library directories.
	DriverRoot string

	// KmsgPath is the kernel log: kmsg.SyslogSource (the ring buffer
	// through syslog(2)), the /dev/kmsg device, or a file to follow (the
	// sim's log); "" turns the kernel-log monitor off.
	KmsgPath string
	// KmsgPoll is how often a followed file or the syslog(2) ring is
	// checked for new records.
	KmsgPoll time.Duration
	// Fabric reads the node's RDMA devices (InfiniBand, RoCE, EFA) from
	// SysfsPath/class/infiniband every interval.
	Fabric bool
	// SysfsPath is where the host's sysfs is mounted; "" means
	// HostRoot/sys.
	SysfsPath string
	// ExpectedRDMADevices is how many RDMA devices the node should have;
	// set, it wins over the instance type's count (fabric.ExpectedDevices,
	// the most the type takes); 0 leaves that, or unknown.
	ExpectedRDMADevices int
	// FabricManagerLog is NVIDIA Fabric Manager's log file, followed for
	// its NVSwitch and NVLink failures; "" turns that off.
	FabricManagerLog string
	// PodResourcesSocket is the kubelet's pod-resources socket, read for
	// the pods that hold a faulty GPU; "" turns it off (their pods are
	// then unknown, and a repair drains the whole node).
	PodResourcesSocket string
	// StateDir keeps the kernel-log position across restarts.
	StateDir string
	// XidConfig is a YAML file of Xid catalog overrides.
	XidConfig string
	// ConfigFile holds the health rules (default: the built-in set); it
	// is watched and reloaded when it changes.
	ConfigFile string
	// ConditionTypes names the GPU and kernel conditions on the Node:
	// v1alpha1.ConditionTypesGPUHeal (gpuheal's own, "" means it) or
	// ConditionTypesEKS (the names EKS node auto repair and Karpenter act
	// on). See v1alpha1.AgentConditionTypesFor.
	ConditionTypes string

	Interval       time.Duration
	MetricsAddress string

	// AgentChecksInterval: the health gate's checks report
	// (v1alpha1.AnnotationAgentChecks) is written on the Node whenever a
	// result changes and at least this often; 0 turns it off.
	AgentChecksInterval time.Duration
	// JoinGate taints a Node that has never passed the health gate
	// (no v1alpha1.AnnotationValidatedAt) with v1alpha1.TaintValidating
	// on the agent's first write; only the controller removes it.
	JoinGate     bool
	PushGateway  string
	PushInterval time.Duration

	// GCPercent is the garbage collector's target (GOGC) that
	// cmd/gpuheal-agent sets for the process unless GOGC is in the
	// environment.
	GCPercent int
	// ReturnMemory hands the memory a collection freed back to the OS
	// right after it (debug.FreeOSMemory): a forced collection per
	// interval, ~0.05 % of a core, for ~1.5 MiB less resident between
	// collections than the runtime's gradual scavenger leaves.
	ReturnMemory bool

	// Standalone runs without Kubernetes: metrics only (or one snapshot
	// with Once).
	Standalone bool
	Once       bool
	Output     string

	// Predictor configures the failure predictor (docs/predictor.md).
	Predictor predictor.Options

	Sim SimOptions
}

// SimOptions configure the simulated backend.
type SimOptions struct {
	GPUs         int
	Model        string
	Seed         int64
	ScheduleFile string
	// KernelLogFile, when set, receives the sim's kernel-log records as
	// raw /dev/kmsg lines, for a kernel-log monitor to follow.
	KernelLogFile string
}

// Validate checks the options together and names the first bad one.
func (o *Options) Validate() error {
	switch o.Backend {
	case BackendAuto, BackendNVML, BackendSMI, BackendSim:
	default:
		return fmt.Errorf("--gpu-backend %q: want auto, nvml, smi or sim", o.Backend)
	}
	if o.Interval < time.Second {
		return fmt.Errorf("--interval %v: must be at least 1s", o.Interval)
	}
	if o.CallTimeout <= 0 || o.CallTimeout >= o.Interval {
		return fmt.Errorf("--call-timeout %v: must be positive and shorter than --interval %v", o.CallTimeout, o.Interval)
	}
	if o.ReadyThreshold < 0 || (o.ReadyThreshold > 0 && o.ReadyThreshold < o.Interval) {
		return fmt.Errorf("--ready-threshold %v: must be at least --interval %v (one failed pass is not a failing agent)", o.ReadyThreshold, o.Interval)
	}
	if o.DriverRoot != "" && !filepath.IsAbs(o.DriverRoot) {
		return fmt.Errorf("--driver-root %q: must be an absolute path", o.DriverRoot)
	}
	if _, ok := v1alpha1.AgentConditionTypesFor(o.ConditionTypes); !ok {
		return fmt.Errorf("--condition-types %q: want %s", o.ConditionTypes, strings.Join(v1alpha1.ConditionTypeSets, " or "))
	}
	if o.AgentChecksInterval != 0 && o.AgentChecksInterval < time.Second {
		return fmt.Errorf("--agent-checks-interval %v: must be 0 (off) or at least 1s", o.AgentChecksInterval)
	}
	if o.ExpectedGPUs < 0 {
		return fmt.Errorf("--expected-gpus %d: must be 0 (unknown) or more", o.ExpectedGPUs)
	}
	if o.ExpectedRDMADevices < 0 {
		return fmt.Errorf("--expected-rdma-devices %d: must be 0 (unknown) or more", o.ExpectedRDMADevices)
	}
	if o.Once && !o.Standalone {
		return fmt.Errorf("--once needs --standalone")
	}
	if o.Output != "json" && o.Output != "text" {
		return fmt.Errorf("--output %q: want json or text", o.Output)
	}
	if !o.Standalone && o.NodeName == "" {
		return fmt.Errorf("--node-name is required inside a cluster (set it from the downward API spec.nodeName), or use --standalone")
	}
	if o.PushGateway != "" {
		u, err := url.Parse(o.PushGateway)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--push-gateway %q: want an http(s) URL", o.PushGateway)
		}
		if o.PushInterval < time.Second {
			return fmt.Errorf("--push-interval %v: must be at least 1s", o.PushInterval)
		}
	}
	if o.KmsgPath != "" && o.KmsgPoll <= 0 {
		return fmt.Errorf("--kmsg-poll-interval %v: must be positive", o.KmsgPoll)
	}
	if o.GCPercent < 10 {
		return fmt.Errorf("--gc-percent %d: must be at least 10", o.GCPercent)
	}
	if err := o.Predictor.Validate(); err != nil {
		return err
	}
	if o.Backend == BackendSim && (o.Sim.GPUs < 1 || o.Sim.GPUs > 8) {
		return fmt.Errorf("--sim-gpus %d: must be 1 to 8", o.Sim.GPUs)
	}
	return nil
}
