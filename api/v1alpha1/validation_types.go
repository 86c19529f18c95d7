package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CheckKind is what a validation check runs.
// +kubebuilder:validation:Enum=Agent;DCGM;NCCL;NVBandwidth
type CheckKind string

// Check kinds. Agent reads the agent's own report on the Node (no Job);
// the others run as a Job pinned to the node that requests all its GPUs.
const (
	CheckAgent       CheckKind = "Agent"
	CheckDCGM        CheckKind = "DCGM"
	CheckNCCL        CheckKind = "NCCL"
	CheckNVBandwidth CheckKind = "NVBandwidth"
)

// Agent check names: what the agent judges from what it already reads,
// published in its report (AnnotationAgentChecks) on its own Node.
const (
	AgentCheckGPUsPresent         = "GPUsPresent"
	AgentCheckNoVolatileECC       = "NoVolatileUncorrectedECC"
	AgentCheckNoRowRemapPending   = "NoRowRemapPendingOrFailed"
	AgentCheckNVLinksUp           = "NVLinksUp"
	AgentCheckFabricHealthy       = "FabricHealthy"
	AgentCheckPCIeLinkAtMax       = "PCIeLinkAtMax"
	AgentCheckNoRecoveryPending   = "NoRecoveryActionPending"
	AgentCheckDriverVersionsMatch = "DriverVersionsMatch"
)

// AgentCheckNames are every agent check, in the order the agent reports them.
var AgentCheckNames = []string{
	AgentCheckGPUsPresent, AgentCheckNoVolatileECC, AgentCheckNoRowRemapPending, AgentCheckNVLinksUp,
	AgentCheckFabricHealthy, AgentCheckPCIeLinkAtMax, AgentCheckNoRecoveryPending, AgentCheckDriverVersionsMatch,
}

// BandwidthFloor is the least bandwidth a GPU product must reach.
type BandwidthFloor struct {
	// Product matches the node's nvidia.com/gpu.product label when it
	// contains this text (case-insensitive), e.g. "H100"; "*" matches any
	// product. The first floor that matches applies.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Product string `json:"product"`
	// MinGBps is the floor in GB/s: the nccl-tests "Avg bus bandwidth", or
	// nvbandwidth's smallest device-to-device figure.
	// +kubebuilder:validation:Minimum=1
	MinGBps int32 `json:"minGBps"`
}

// ValidationCheck is one test a node must pass before it takes work.
type ValidationCheck struct {
	// Name of the check, unique in the policy; part of its Job's name.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=20
	Name string `json:"name"`
	// Kind is what runs: Agent, DCGM, NCCL or NVBandwidth.
	Kind CheckKind `json:"kind"`
	// Timeout bounds the check, from its start to its result; a check
	// without a result by then fails.
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('6h')",message="must be a duration from 10s to 6h"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// AgentChecks (kind Agent) names the agent's checks that must pass;
	// empty means all of them.
	// +kubebuilder:validation:items:Enum=GPUsPresent;NoVolatileUncorrectedECC;NoRowRemapPendingOrFailed;NVLinksUp;FabricHealthy;PCIeLinkAtMax;NoRecoveryActionPending;DriverVersionsMatch
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	AgentChecks []string `json:"agentChecks,omitempty"`
	// Level (kind DCGM) is the `dcgmi diag -r` level, 1 to 4.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4
	// +optional
	Level int32 `json:"level,omitempty"`
	// Floors (kinds NCCL and NVBandwidth): the bandwidth each GPU product
	// must reach. A node whose product matches none fails the check.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Floors []BandwidthFloor `json:"floors,omitempty"`
	// Image runs the check (Job kinds); empty: the controller's default for
	// the kind (--check-image-dcgm and friends).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
	// Command replaces the image's default command for the kind; its
	// output (logs) must be in the tool's own format.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`
}

// ValidationSpec is the health gate: checks a node must pass after a
// repair (and, when asked, when it joins or while it idles) before it
// takes work again.
// +kubebuilder:validation:XValidation:rule="self.checks.all(c, self.checks.exists_one(d, d.name == c.name))",message="checks: each name at most once"
// +kubebuilder:validation:XValidation:rule="self.checks.all(c, c.kind != 'DCGM' || has(c.level))",message="checks: a DCGM check needs a level from 1 to 4"
// +kubebuilder:validation:XValidation:rule="self.checks.all(c, !(c.kind == 'NCCL' || c.kind == 'NVBandwidth') || (has(c.floors) && size(c.floors) > 0))",message="checks: an NCCL or NVBandwidth check needs floors"
// +kubebuilder:validation:XValidation:rule="self.checks.all(c, c.kind == 'Agent' || !has(c.agentChecks))",message="checks: agentChecks belong to kind Agent only"
type ValidationSpec struct {
	// Checks run one after another, in order; every one must pass.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Checks []ValidationCheck `json:"checks"`
	// OnJoin: a GPU node of the policy that has never passed the checks
	// carries TaintValidating until it does (new nodes take no work before).
	// +optional
	OnJoin bool `json:"onJoin,omitempty"`
	// IdleInterval, when set, runs the checks on each node of the policy
	// with no GPU workload this often, at the lowest priority: a workload
	// that needs the node preempts the check.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10m')",message="must be at least 10m"
	// +optional
	IdleInterval *metav1.Duration `json:"idleInterval,omitempty"`
}

// CheckOutcome is how a check ended.
// +kubebuilder:validation:Enum=Passed;Failed;Error
type CheckOutcome string

// Check outcomes. Failed: the node fell short (a GPU is bad). Error: the
// check could not say (timed out, output unreadable, Job not scheduled);
// it holds the node like a failure, but is counted apart.
const (
	CheckPassed CheckOutcome = "Passed"
	CheckFailed CheckOutcome = "Failed"
	CheckError  CheckOutcome = "Error"
)

// CheckResult is the outcome of one check on one node.
type CheckResult struct {
	Name string    `json:"name"`
	Kind CheckKind `json:"kind"`
	// Node the check ran on (the replacement, after a replace).
	Node string `json:"node"`
	// Attempt of the incident the check belongs to.
	// +optional
	Attempt int32 `json:"attempt,omitempty"`
	// Outcome: Passed, Failed or Error; empty while the check runs.
	// +optional
	Outcome CheckOutcome `json:"outcome,omitempty"`
	// Value is what was measured, with its unit ("371.2 GB/s", "PASS").
	// +optional
	Value string `json:"value,omitempty"`
	// Floor is what it had to reach ("350 GB/s", "level 3 all pass").
	// +optional
	Floor string `json:"floor,omitempty"`
	// Started and Finished bound the check.
	Started metav1.Time `json:"started"`
	// +optional
	Finished *metav1.Time `json:"finished,omitempty"`
	// Job is the namespace/name of the check's Job (Job kinds).
	// +optional
	Job string `json:"job,omitempty"`
	// Message says why, in words.
	// +optional
	Message string `json:"message,omitempty"`
	// Excerpt of the tool's output around what decided the outcome.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Excerpt string `json:"excerpt,omitempty"`
}

// AgentChecks is the agent's report of its checks, the JSON value of
// AnnotationAgentChecks on its own Node, written with every snapshot that
// changes a result (and at least every report interval).
type AgentChecks struct {
	// Time of the snapshot the checks judged.
	Time metav1.Time `json:"time"`
	// BootID of the host (/proc/sys/kernel/random/boot_id): a report from
	// before a reboot never passes the gate after it.
	// +optional
	BootID string       `json:"bootID,omitempty"`
	Checks []AgentCheck `json:"checks"`
}

// AgentCheck is one of the agent's checks.
type AgentCheck struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	// Value found and Expected value, in words ("7 GPUs", "8 GPUs").
	// +optional
	Value string `json:"value,omitempty"`
	// +optional
	Expected string `json:"expected,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}
