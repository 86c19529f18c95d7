package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Action is what the controller does to an unhealthy node once it is drained.
// +kubebuilder:validation:Enum=ResetGPU;Reboot;Replace;CordonOnly;Ignore
type Action string

// Actions, from mildest to strongest. CordonOnly keeps the node out of
// scheduling and drained for a person to look at; Ignore records the
// incident and touches nothing; ResetGPU resets the faulty GPUs alone
// (spec.gpuReset) and falls back to Reboot when that fails.
const (
	ActionIgnore     Action = "Ignore"
	ActionCordonOnly Action = "CordonOnly"
	ActionResetGPU   Action = "ResetGPU"
	ActionReboot     Action = "Reboot"
	ActionReplace    Action = "Replace"
)

// DrainTimeoutAction is what happens when pods are still on the node when
// the drain timeout passes (typically held by a PodDisruptionBudget).
// +kubebuilder:validation:Enum=Wait;ForceDelete;Proceed
type DrainTimeoutAction string

// Choices after a drain timeout.
const (
	// DrainWait keeps evicting and waiting; PodDisruptionBudgets win.
	DrainWait DrainTimeoutAction = "Wait"
	// DrainForceDelete deletes the remaining pods without the Eviction API
	// (never a pod with emptyDir data unless DeleteEmptyDirData allows it).
	DrainForceDelete DrainTimeoutAction = "ForceDelete"
	// DrainProceed goes on with the action and leaves the pods to it.
	DrainProceed DrainTimeoutAction = "Proceed"
)

// UnhealthyCondition makes a node unhealthy when its condition Type has
// Status for at least For.
type UnhealthyCondition struct {
	// Type of the node condition, e.g. GPUHealAcceleratorHealthy.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type"`
	// Status that counts as unhealthy.
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status metav1.ConditionStatus `json:"status"`
	// For is how long the condition must hold before the node counts as
	// unhealthy, measured from the condition's lastTransitionTime.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration such as 2m"
	For metav1.Duration `json:"for"`
}

// ActionRule maps what the agent found to an action. A rule matches when
// every field it sets matches; the first matching rule wins.
type ActionRule struct {
	// ConditionType limits the rule to one condition type.
	// +optional
	ConditionType string `json:"conditionType,omitempty"`
	// Reason limits the rule to one condition reason, e.g. NvidiaXID79Error.
	// +optional
	Reason string `json:"reason,omitempty"`
	// RecommendedAction limits the rule to what the agent recommended
	// (none, restart-app, reset-gpu, reboot, replace).
	// +kubebuilder:validation:Enum=none;restart-app;reset-gpu;reboot;replace
	// +optional
	RecommendedAction string `json:"recommendedAction,omitempty"`
	// Action to take.
	Action Action `json:"action"`
}

// Escalation turns repeated reboots into a replacement.
type Escalation struct {
	// RebootsBeforeReplace: when the node was already rebooted this many
	// times within Window, replace it instead.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +optional
	RebootsBeforeReplace int32 `json:"rebootsBeforeReplace,omitempty"`
	// Window over which reboots are counted.
	// +kubebuilder:default="24h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 24h"
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`
	// RebootTimeout: a rebooted node that is not Ready and healthy within
	// this time is replaced.
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 15m"
	// +optional
	RebootTimeout *metav1.Duration `json:"rebootTimeout,omitempty"`
	// ReplaceTimeout: how long a replacement may take before the incident
	// is marked Failed.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 30m"
	// +optional
	ReplaceTimeout *metav1.Duration `json:"replaceTimeout,omitempty"`
}

// DrainSpec says how pods leave the node. Pods are always evicted through
// the Eviction API so PodDisruptionBudgets hold; DaemonSet pods and mirror
// pods are left alone.
type DrainSpec struct {
	// Timeout for evicting every pod.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 10m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// OnTimeout: Wait, ForceDelete or Proceed.
	// +kubebuilder:default=Wait
	// +optional
	OnTimeout DrainTimeoutAction `json:"onTimeout,omitempty"`
	// DeleteEmptyDirData allows evicting pods with emptyDir volumes (their
	// data is lost). When false such a pod holds the drain like a PDB, and
	// onTimeout: ForceDelete leaves it too.
	// +kubebuilder:default=true
	// +optional
	DeleteEmptyDirData *bool `json:"deleteEmptyDirData,omitempty"`
	// GracePeriodSeconds overrides the pods' own termination grace period.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	// Workloads choose how each workload's pods leave; the first entry
	// that matches a pod wins, and a pod no entry matches is evicted at
	// once (Immediate). The fault's severity bounds every wait: a GPU that
	// is gone (Xid 79, a missing GPU) waits for nothing, another fatal
	// fault at most 5m, a warning or a predicted failure the full time
	// (docs/remediation.md, "Drain modes"). The drain timeout counts from
	// the end of the last wait.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Workloads []WorkloadDrain `json:"workloads,omitempty"`
}

// DrainMode is how the pods of one workload leave a node.
// +kubebuilder:validation:Enum=Immediate;AllowCompletion;CheckpointThenEvict;DeleteAfterTimeout
type DrainMode string

// Drain modes.
const (
	// DrainImmediate evicts at once: the default.
	DrainImmediate DrainMode = "Immediate"
	// DrainAllowCompletion lets the pod run to its end, up to MaxWait
	// from the drain's start, then evicts it.
	DrainAllowCompletion DrainMode = "AllowCompletion"
	// DrainCheckpointThenEvict asks the pod to checkpoint (annotations, an
	// Event, an optional HTTP POST), waits up to Grace for it to set
	// AnnotationCheckpointDone or to exit, then evicts it.
	DrainCheckpointThenEvict DrainMode = "CheckpointThenEvict"
	// DrainDeleteAfterTimeout evicts at once and deletes the pod (without
	// the Eviction API) when it is still there Timeout after the drain's
	// start.
	DrainDeleteAfterTimeout DrainMode = "DeleteAfterTimeout"
)

// WorkloadDrain picks pods by namespace and/or label and says how they
// leave. A pod matches when it is in one of Namespaces (if set) and
// matches Selector (if set).
// +kubebuilder:validation:XValidation:rule="has(self.namespaces) || has(self.selector)",message="set namespaces, selector or both"
// +kubebuilder:validation:XValidation:rule="self.mode != 'AllowCompletion' || has(self.maxWait)",message="AllowCompletion needs maxWait"
// +kubebuilder:validation:XValidation:rule="self.mode != 'CheckpointThenEvict' || has(self.grace)",message="CheckpointThenEvict needs grace"
// +kubebuilder:validation:XValidation:rule="self.mode != 'DeleteAfterTimeout' || has(self.timeout)",message="DeleteAfterTimeout needs timeout"
type WorkloadDrain struct {
	// Namespaces the pods are in.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// Selector on the pods' labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Mode: Immediate, AllowCompletion, CheckpointThenEvict or
	// DeleteAfterTimeout.
	Mode DrainMode `json:"mode"`
	// MaxWait (AllowCompletion): how long a pod may run on, from the
	// drain's start.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 2h"
	// +optional
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
	// Grace (CheckpointThenEvict): how long the pod has to checkpoint,
	// from the request.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 10m"
	// +optional
	Grace *metav1.Duration `json:"grace,omitempty"`
	// Timeout (DeleteAfterTimeout): how long after the drain's start a
	// pod still on the node is deleted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 15m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// CorrelatedFaults is the breaker for a fault many nodes share. Incidents
// are grouped by cause: the condition's type and reason, and the node's
// driver version, kernel version, image, instance type and zone. When
// incidents of one cause open on more nodes than MaxPerCause within Window
// (a node counts once, however often it flaps), the cause's
// breaker opens: its incidents are held in Pending (other causes go on)
// until a person closes it with the annotation
// gpuheal.io/cause-breakers-closed-at on the policy.
type CorrelatedFaults struct {
	// MaxPerCause (count, or percent of the policy's nodes; at least 1):
	// the most nodes with incidents of one cause within Window that are
	// remediated.
	// +kubebuilder:default=3
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be a count of at least 1 or a percent from 0% to 100%"
	// +optional
	MaxPerCause *intstr.IntOrString `json:"maxPerCause,omitempty"`
	// Window over which incidents of a cause are counted.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 1h"
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`
}

// RemediationPolicySpec says which nodes are repaired, when and how.
// +kubebuilder:validation:XValidation:rule="!has(self.unhealthyConditions) || self.unhealthyConditions.all(x, self.unhealthyConditions.exists_one(y, y.type == x.type && y.status == x.status))",message="unhealthyConditions: each type and status at most once"
type RemediationPolicySpec struct {
	// NodeSelector picks the nodes of this policy among the GPU nodes; empty
	// selects all of them.
	// +optional
	NodeSelector metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// UnhealthyConditions: any one of them held long enough makes a node
	// unhealthy.
	// +kubebuilder:default={{type: GPUHealAcceleratorHealthy, status: "False", for: "2m"},{type: Ready, status: "False", for: "10m"},{type: Ready, status: "Unknown", for: "10m"}}
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	UnhealthyConditions []UnhealthyCondition `json:"unhealthyConditions,omitempty"`
	// Actions map what was found to what is done; the first match wins.
	// When none matches: recommended replace → Replace, restart-app →
	// Ignore, anything else → Reboot (escalating to Replace).
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Actions []ActionRule `json:"actions,omitempty"`
	// Escalation from reboot to replace.
	// +kubebuilder:default={}
	// +optional
	Escalation Escalation `json:"escalation,omitempty"`
	// MaxUnhealthy (count or percent of the policy's nodes): while more
	// nodes are unhealthy or held out of service by gpuheal (cordoned by an
	// incident of any action, CordonOnly and predictions included), no new
	// remediation starts (circuit breaker).
	// +kubebuilder:default="20%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be a count or a percent from 0% to 100%"
	// +optional
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`
	// CorrelatedFaults holds incidents of a cause that strikes too many
	// nodes at once (a bad driver or image rollout) instead of replacing
	// healthy hardware one node after another.
	// +kubebuilder:default={}
	// +optional
	CorrelatedFaults CorrelatedFaults `json:"correlatedFaults,omitempty"`
	// MaxParallel (count or percent of the policy's nodes, at least 1):
	// how many remediations may be past Pending at once.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be a count of at least 1 or a percent"
	// +optional
	MaxParallel *intstr.IntOrString `json:"maxParallel,omitempty"`
	// Drain settings.
	// +kubebuilder:default={}
	// +optional
	Drain DrainSpec `json:"drain,omitempty"`
	// Provider reboots and replaces nodes: aws, karpenter, clusterapi,
	// kwok or none. Empty: guessed from each node's providerID.
	// +kubebuilder:validation:Enum="";aws;karpenter;clusterapi;kwok;none
	// +optional
	Provider string `json:"provider,omitempty"`
	// RecoveryHold: a node whose conditions are healthy again for this long
	// before the action starts is left alone (incident Cancelled).
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a non-negative duration such as 1m"
	// +optional
	RecoveryHold *metav1.Duration `json:"recoveryHold,omitempty"`
	// DryRun decides and records everything and changes no Node.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// Paused: incidents are recorded but none starts.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Validation is the health gate: the checks a node must pass after a
	// reboot or a replacement (and, when asked, when it joins or while it
	// idles) before it is uncordoned (docs/health-gate.md). After a repair
	// the node stays cordoned and tainted gpuheal.io/validating while the
	// checks run; a failure after a reboot replaces it.
	// +optional
	Validation *ValidationSpec `json:"validation,omitempty"`
	// GPUReset configures the ResetGPU action, the default for a fault
	// the agent says a GPU reset repairs (advice reset-gpu).
	// +kubebuilder:default={}
	// +optional
	GPUReset GPUResetSpec `json:"gpuReset,omitempty"`
	// Lemon retires repeat offenders: a machine behind too many hardware
	// incidents is replaced or quarantined instead of
	// being reset or rebooted once more (docs/health-score.md).
	// +kubebuilder:default={}
	// +optional
	Lemon LemonSpec `json:"lemon,omitempty"`
}

// LemonAction is what happens to a lemon.
type LemonAction string

const (
	// LemonReplace replaces the node: new hardware.
	LemonReplace LemonAction = "Replace"
	// LemonQuarantine cordons the node and leaves it to a person (an RMA):
	// the incident's action is CordonOnly.
	LemonQuarantine LemonAction = "Quarantine"
)

// LemonSpec is the lemon rule. Incidents are counted by the node's machine
// (its system UUID, else its provider ID) and by GPU UUID, never by node
// name, from the audit log: a reboot keeps the board and its history, a
// replacement starts afresh. Only hardware repairs count (ResetGPU,
// Reboot, Replace, CordonOnly), not an application's faults or warnings.
// +kubebuilder:validation:XValidation:rule="!has(self.incidents) || self.incidents == 0 || self.incidents >= 2",message="incidents: 0 (off) or at least 2"
type LemonSpec struct {
	// Incidents: the incident that brings a machine's count within Window
	// to this many makes it a lemon; 0 turns the rule off. Unset is 3.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +optional
	Incidents *int32 `json:"incidents,omitempty"`
	// Window over which incidents are counted.
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration such as 720h"
	// +optional
	Window *metav1.Duration `json:"window,omitempty"`
	// Action for a lemon.
	// +kubebuilder:default=Replace
	// +kubebuilder:validation:Enum=Replace;Quarantine
	// +optional
	Action LemonAction `json:"action,omitempty"`
}

// RemediationPolicyStatus is what the controller last saw.
type RemediationPolicyStatus struct {
	// ObservedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// MatchedNodes is how many nodes the policy selects.
	// +optional
	MatchedNodes int32 `json:"matchedNodes,omitempty"`
	// UnhealthyNodes is how many of them are unhealthy now or held out of
	// service by gpuheal.
	// +optional
	UnhealthyNodes int32 `json:"unhealthyNodes,omitempty"`
	// InFlight is how many remediations are past Pending.
	// +optional
	InFlight int32 `json:"inFlight,omitempty"`
	// BreakerOpen is true while UnhealthyNodes exceeds maxUnhealthy.
	// +optional
	BreakerOpen bool `json:"breakerOpen,omitempty"`
	// CauseBreakers are the causes whose breaker is open: their incidents
	// wait for a person.
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=64
	// +optional
	CauseBreakers []CauseBreaker `json:"causeBreakers,omitempty"`
	// Conditions: BreakerOpen, Conflicts, ProviderReady.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CauseBreaker is an open breaker of one cause.
type CauseBreaker struct {
	// ID is a short hash of the cause.
	ID string `json:"id"`
	// Cause shared by the incidents.
	Cause Cause `json:"cause"`
	// OpenedAt is when the breaker opened.
	OpenedAt metav1.Time `json:"openedAt"`
	// Nodes with incidents of the cause within the window when it opened.
	Nodes int32 `json:"nodes"`
}

// RemediationPolicy decides which GPU nodes are repaired, when and how.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rpol
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="DryRun",type=boolean,JSONPath=`.spec.dryRun`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.matchedNodes`
// +kubebuilder:printcolumn:name="Unhealthy",type=integer,JSONPath=`.status.unhealthyNodes`
// +kubebuilder:printcolumn:name="Breaker",type=boolean,JSONPath=`.status.breakerOpen`
// +kubebuilder:printcolumn:name="ProviderReady",type=string,JSONPath=`.status.conditions[?(@.type=="ProviderReady")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RemediationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RemediationPolicySpec   `json:"spec,omitempty"`
	Status RemediationPolicyStatus `json:"status,omitempty"`
}

// RemediationPolicyList is a list of RemediationPolicy.
// +kubebuilder:object:root=true
type RemediationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RemediationPolicy `json:"items"`
}

func init() { knownTypes = append(knownTypes, &RemediationPolicy{}, &RemediationPolicyList{}) }
