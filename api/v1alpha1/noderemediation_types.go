package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is where an incident stands.
// +kubebuilder:validation:Enum=Pending;Cordoned;Draining;Drained;Resetting;Rebooting;Replacing;Verifying;Validating;Succeeded;Failed;Cancelled
type Phase string

// Phases of a NodeRemediation. Pending → Cordoned → Draining → Drained →
// Rebooting | Replacing → Verifying → Validating (when the policy has a
// health gate) → Succeeded | Failed | Cancelled.
const (
	PhasePending   Phase = "Pending"
	PhaseCordoned  Phase = "Cordoned"
	PhaseDraining  Phase = "Draining"
	PhaseDrained   Phase = "Drained"
	PhaseRebooting Phase = "Rebooting"
	PhaseResetting Phase = "Resetting"
	PhaseReplacing Phase = "Replacing"
	PhaseVerifying Phase = "Verifying"
	// PhaseValidating: the node (or its replacement) is Ready and healthy
	// and runs the policy's checks, still cordoned and tainted.
	PhaseValidating Phase = "Validating"
	PhaseSucceeded  Phase = "Succeeded"
	PhaseFailed     Phase = "Failed"
	PhaseCancelled  Phase = "Cancelled"
)

// Terminal reports whether the incident is over.
func (p Phase) Terminal() bool {
	return p == PhaseSucceeded || p == PhaseFailed || p == PhaseCancelled
}

// Active reports whether the incident holds one of the policy's parallel
// slots: it has started (left Pending) and is not over.
func (p Phase) Active() bool { return p != "" && p != PhasePending && !p.Terminal() }

// Trigger is the node condition that opened the incident.
type Trigger struct {
	Type   string                 `json:"type"`
	Status metav1.ConditionStatus `json:"status"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// Since is the condition's lastTransitionTime.
	Since metav1.Time `json:"since"`
	// RecommendedAction is what the agent recommended, when it said.
	// +optional
	RecommendedAction string `json:"recommendedAction,omitempty"`
}

// Cause is what an incident has in common with others that fail the same
// way: the condition that opened it and what the node runs on.
type Cause struct {
	// Condition is the trigger's type and reason, e.g.
	// AcceleratedHardwareReady/NvidiaXID79Error.
	// +optional
	Condition string `json:"condition,omitempty"`
	// +optional
	DriverVersion string `json:"driverVersion,omitempty"`
	// +optional
	KernelVersion string `json:"kernelVersion,omitempty"`
	// Image is the machine image (EKS: the AMI id; else the OS image).
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	InstanceType string `json:"instanceType,omitempty"`
	// +optional
	Zone string `json:"zone,omitempty"`
}

// NodeRemediationSpec is fixed when the incident opens.
type NodeRemediationSpec struct {
	// NodeName of the unhealthy node.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeName is immutable"
	NodeName string `json:"nodeName"`
	// PolicyName of the RemediationPolicy that matched the node. It must be
	// the one policy selecting the node, and the gpuheal.io/policy label
	// must name it too; otherwise the incident is refused (PolicyMismatch).
	// +kubebuilder:validation:MinLength=1
	PolicyName string `json:"policyName"`
	// Trigger that opened the incident.
	Trigger Trigger `json:"trigger"`
	// Cause groups the incident with others that fail the same way (read
	// from the node when the incident opened).
	// +optional
	Cause Cause `json:"cause,omitempty"`
}

// PhaseTransition records when a phase was entered.
type PhaseTransition struct {
	Phase Phase `json:"phase"`
	// Time with microseconds: phases of an incident can be milliseconds apart.
	Time metav1.MicroTime `json:"time"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ProviderRequest records one call to the node's provider.
type ProviderRequest struct {
	Action Action `json:"action"`
	// Attempt is the incident's attempt number this call belongs to.
	Attempt  int32       `json:"attempt"`
	Provider string      `json:"provider"`
	Time     metav1.Time `json:"time"`
	// RequestID is the provider's id for the call (EC2 request id, Auto
	// Scaling activity id, deleted object name).
	// +optional
	RequestID string `json:"requestID,omitempty"`
	// Error, when the call failed.
	// +optional
	Error string `json:"error,omitempty"`
}

// WorkloadWait is one pod the drain waits on before it evicts it.
type WorkloadWait struct {
	// Pod is namespace/name.
	Pod string `json:"pod"`
	// Mode of the policy's entry that matched the pod.
	Mode DrainMode `json:"mode"`
	// Since is when the wait began: the drain's start, or the checkpoint
	// request.
	Since metav1.Time `json:"since"`
	// Deadline is when the wait ends at the latest, the fault's severity
	// bound applied.
	Deadline metav1.Time `json:"deadline"`
	// Outcome is empty while waiting; then CheckpointDone, Exited, Gone,
	// WaitTimedOut or Deleted.
	// +optional
	Outcome string `json:"outcome,omitempty"`
	// EndedAt is when the outcome was seen.
	// +optional
	EndedAt *metav1.Time `json:"endedAt,omitempty"`
}

// NodeRemediationStatus is the incident's state machine. Each step is
// recorded here before the next one starts, so a new controller resumes
// where the last one stopped.
type NodeRemediationStatus struct {
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// Action chosen for the node (after escalation).
	// +optional
	Action Action `json:"action,omitempty"`
	// Attempts counts provider actions started for this incident.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// Reason and Message explain the current phase in words.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// DryRun is true when the incident was decided under a dry-run policy.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// Phases is the history of phase entries, oldest first.
	// +listType=atomic
	// +optional
	Phases []PhaseTransition `json:"phases,omitempty"`
	// EvictedPods are the namespace/name of pods evicted or deleted.
	// +listType=atomic
	// +optional
	EvictedPods []string `json:"evictedPods,omitempty"`
	// ProviderRequests made for this incident.
	// +listType=atomic
	// +optional
	ProviderRequests []ProviderRequest `json:"providerRequests,omitempty"`
	// Replacement is the node that replaced this one, when known.
	// +optional
	Replacement string `json:"replacement,omitempty"`
	// Validation holds the results of the health gate's checks, every
	// attempt's, oldest first.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Validation []CheckResult `json:"validation,omitempty"`
	// WorkloadWaits are the pods the drain waited on (or asked to
	// checkpoint) under the policy's drain.workloads, at most 256.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	WorkloadWaits []WorkloadWait `json:"workloadWaits,omitempty"`
	// GPUReset is the incident's single-GPU reset: the request and the
	// agent's answer (action ResetGPU).
	// +optional
	GPUReset *GPUResetStatus `json:"gpuReset,omitempty"`
	// Conditions: Admitted, DryRun, DrainBlocked.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeRemediation is one incident on one node, from detection to outcome.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nrem
// +kubebuilder:selectablefield:JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Action",type=string,JSONPath=`.status.action`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.trigger.reason`
// +kubebuilder:printcolumn:name="DryRun",type=boolean,JSONPath=`.status.dryRun`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeRemediation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeRemediationSpec   `json:"spec,omitempty"`
	Status NodeRemediationStatus `json:"status,omitempty"`
}

// NodeRemediationList is a list of NodeRemediation.
// +kubebuilder:object:root=true
type NodeRemediationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeRemediation `json:"items"`
}

func init() { knownTypes = append(knownTypes, &NodeRemediation{}, &NodeRemediationList{}) }
