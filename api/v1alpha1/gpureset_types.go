package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The single-GPU repair (docs/remediation.md, "Resetting one GPU"). The
// agent reports which of its GPUs are faulty and which pods hold them
// (AnnotationGPUFaults, a GPUFaultReport); the controller evicts only
// those pods, asks for the reset in the incident's status.gpuReset, and the
// agent of that node, which alone can reach the GPU, carries it out and
// answers in AnnotationGPUReset (a GPUResetReport). The agent acts only on
// a request it finds in a NodeRemediation of its own node, and at most once
// per request ID, across its restarts.

// GPUResetSpec configures the ResetGPU action of a policy.
type GPUResetSpec struct {
	// Timeout bounds the wait for the agent's answer once the reset is
	// requested; past it the incident escalates to a reboot. The agent
	// itself takes at most 30s for the GPU's processes to go, 60s per GPU
	// reset and 30s to verify: the default covers one GPU; a node that
	// resets several at once needs 1m more for each.
	// +kubebuilder:default="3m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be a duration of at least 1m (the agent alone may take 2m for one GPU)"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// PartialDrain evicts only the pods that hold the faulty GPUs, as the
	// agent read them from the kubelet's PodResources API, and leaves the
	// node schedulable; false (or a mapping the agent could not know)
	// cordons and drains the whole node before the reset.
	// +kubebuilder:default=true
	// +optional
	PartialDrain *bool `json:"partialDrain,omitempty"`
	// DeviceTaintEffect is the effect of the DeviceTaintRule put on the GPU
	// to reset where a DRA driver publishes it. NoSchedule (the default)
	// only keeps new claims off it: its pods leave through the Eviction
	// API, where PodDisruptionBudgets hold. NoExecute also has Kubernetes'
	// device taint eviction controller delete every pod whose claim holds
	// the GPU, whatever its budget (a pod may tolerate the taint for a
	// while in its claim's request): for GPUs whose pods must leave at
	// once, such as one that may compute wrong results.
	// +kubebuilder:validation:Enum=NoSchedule;NoExecute
	// +kubebuilder:default=NoSchedule
	// +optional
	DeviceTaintEffect string `json:"deviceTaintEffect,omitempty"`
}

// The effects a policy may give a GPU's DeviceTaintRule
// (GPUResetSpec.DeviceTaintEffect), as resource.k8s.io names them.
const (
	DeviceTaintEffectNoSchedule = "NoSchedule"
	DeviceTaintEffectNoExecute  = "NoExecute"
)

// GPURef names one GPU of a node. BusID is the PCI address as nvidia-smi
// prints it (00000000:1B:00.0); the reset goes by it.
type GPURef struct {
	Index int32  `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	BusID string `json:"busID,omitempty"`
}

// GPU sharing modes, as the agent reads them from the kubelet's
// PodResources API (GPUFault.Sharing). Only Exclusive lets the controller
// drain a GPU's pods alone.
const (
	GPUSharingExclusive = "Exclusive" // whole GPUs, one pod each
	GPUSharingShared    = "Shared"    // time-slicing or MPS replicas of one GPU
	GPUSharingMIG       = "MIG"       // MIG instances
	GPUSharingUnknown   = "Unknown"   // the mapping could not be read
)

// GPUFault is one faulty GPU of the agent's report.
type GPUFault struct {
	GPURef `json:",inline"`
	// Reason is the finding's code (DBE, XID_94, ROW_REMAP_PENDING, …).
	Reason string `json:"reason"`
	// Action is the agent's recommendation for this GPU (finding.Action:
	// reset-gpu, reboot, replace).
	Action string `json:"action"`
	// Pods hold this GPU, as namespace/name, from the kubelet's
	// PodResources API; meaningful only when Sharing is Exclusive.
	Pods []string `json:"pods,omitempty"`
	// Sharing is how the GPU is handed to pods (GPUSharing*).
	Sharing string `json:"sharing"`
	// PodsError says why the pods could not be known (no socket, …).
	PodsError string `json:"podsError,omitempty"`
}

// GPUFaultReport is AnnotationGPUFaults: the GPUs with a fault of their
// own. Outside input to the controller: it bounds its size and evicts a
// listed pod only when the pod really is on the report's node.
type GPUFaultReport struct {
	Time metav1.Time `json:"time"`
	GPUs []GPUFault  `json:"gpus"`
}

// Outcomes of a GPU reset (GPUResetReport.Outcome, GPUResetStatus.Outcome).
const (
	GPUResetRunning   = "Running"
	GPUResetSucceeded = "Succeeded"
	GPUResetFailed    = "Failed"
)

// Reasons of a failed GPU reset (GPUResetReport.Reason).
const (
	ResetReasonInUse        = "GPUInUse"          // processes still on the GPU
	ResetReasonPrimaryGPU   = "PrimaryGPU"        // the GPU drives a display / is the primary GPU
	ResetReasonNotSupported = "ResetNotSupported" // the GPU or platform cannot reset one GPU
	ResetReasonNotFound     = "GPUNotFound"       // no GPU at that bus ID (fallen off the bus)
	ResetReasonTimeout      = "ResetTimeout"      // the reset did not finish in time
	ResetReasonFaultRemains = "FaultRemains"      // the reset ran, the fault did not clear
	ResetReasonInterrupted  = "ResetInterrupted"  // the agent restarted during the reset
	ResetReasonFabric       = "FabricNotReady"    // NVSwitch fabric state not back after the reset
	ResetReasonRefused      = "ResetRefused"      // the agent will not act on this request
	ResetReasonError        = "ResetError"        // any other nvidia-smi or NVML error
)

// GPUResetStep is one step of a reset as the agent ran it (stop NVML use,
// check processes, persistence mode, reset, verify).
type GPUResetStep struct {
	Name    string           `json:"name"`
	Time    metav1.MicroTime `json:"time"`
	OK      bool             `json:"ok"`
	Message string           `json:"message,omitempty"`
}

// GPUResetReport is AnnotationGPUReset: the agent's answer to the last
// request it took.
type GPUResetReport struct {
	RequestID  string         `json:"requestID"`
	GPUs       []GPURef       `json:"gpus"`
	Outcome    string         `json:"outcome"`
	Reason     string         `json:"reason,omitempty"`
	Message    string         `json:"message,omitempty"`
	Steps      []GPUResetStep `json:"steps,omitempty"`
	StartedAt  metav1.Time    `json:"startedAt"`
	FinishedAt *metav1.Time   `json:"finishedAt,omitempty"`
}

// GPUResetStatus is a NodeRemediation's record of its GPU reset: the
// request the controller made and what the agent answered.
type GPUResetStatus struct {
	// RequestID is <incident>-reset-<attempt>; the agent acts on each ID
	// once.
	RequestID string   `json:"requestID,omitempty"`
	GPUs      []GPURef `json:"gpus,omitempty"`
	// RequestedAt is set when the request is written: the agent acts only
	// on a request with it.
	RequestedAt *metav1.Time `json:"requestedAt,omitempty"`
	// PartialDrain is true when only the pods holding the GPUs were
	// evicted; DrainScope says why the whole node was drained otherwise.
	PartialDrain bool   `json:"partialDrain,omitempty"`
	DrainScope   string `json:"drainScope,omitempty"`
	// Outcome, Reason, Message, Steps and FinishedAt are the agent's
	// answer (GPUResetReport), copied when it comes; Outcome is Failed
	// with ResetReasonTimeout when none came in time.
	Outcome    string         `json:"outcome,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Message    string         `json:"message,omitempty"`
	Steps      []GPUResetStep `json:"steps,omitempty"`
	FinishedAt *metav1.Time   `json:"finishedAt,omitempty"`
}
