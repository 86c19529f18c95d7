package v1alpha1

// The wire contract between gpuheal's parts. The agent writes to its Node,
// the controller reads that and writes back, the CLI, the status page and
// the chart read both: every key they exchange is named here and nowhere
// else, so renaming a label is an edit to this file.
//
// Who writes each key is said next to it; a part never writes a key that
// another part owns.

// Labels on Nodes.
const (
	// LabelGPUHealthyCount (agent) is how many of the node's GPUs are
	// healthy, so that work needing all eight avoids a node with seven.
	LabelGPUHealthyCount = "gpuheal.io/gpu-healthy-count"
	// LabelHealthTier (controller) is the node's health-score tier
	// (score.Tier: gold, silver, bronze) for node affinity.
	LabelHealthTier = "gpuheal.io/health-tier"
	// LabelPartOf marks gpuheal's own pods; drains and releases leave them.
	LabelPartOf      = "app.kubernetes.io/part-of"
	LabelPartOfValue = "gpuheal"
	// LabelNvidiaGPUPresent (NVIDIA GPU feature discovery, or the test
	// fleet) marks a GPU node; the sim fleet, the demo and the soak select
	// on it.
	LabelNvidiaGPUPresent = "nvidia.com/gpu.present"
)

// LabelPolicy (controller) on a NodeRemediation names its RemediationPolicy,
// so that a policy's incidents are listed by label.
const LabelPolicy = "gpuheal.io/policy"

// Annotations on Nodes.
const (
	// AnnotationActiveWarnings (agent) is how many warning-severity
	// problems are active on the node; the health score weighs them.
	AnnotationActiveWarnings = "gpuheal.io/active-warnings"
	// AnnotationFailureRisk (agent) is the node's highest GPU failure
	// risk, 0.00–1.00; absent when the predictor is off.
	AnnotationFailureRisk = "gpuheal.io/failure-risk"
	// AnnotationRecommendedActions (agent) is a JSON object from the
	// condition types the agent set unhealthy to the action it recommends
	// (finding.Action: none, restart-app, reset-gpu, reboot, replace), e.g.
	// {"GPUHealAcceleratorHealthy":"replace"}. The controller reads the
	// advice here, never from a condition's message.
	AnnotationRecommendedActions = "gpuheal.io/recommended-actions"

	// AnnotationHealthScore (controller) is the node's health score, 0–100.
	AnnotationHealthScore = "gpuheal.io/health-score"
	// AnnotationGPUHealthScores (controller) is the score of each GPU.
	AnnotationGPUHealthScores = "gpuheal.io/gpu-health-scores"
	// AnnotationScaleInProtected (controller) marks a proven node that
	// scale-in should take last.
	AnnotationScaleInProtected = "gpuheal.io/scale-in-protected"
	// AnnotationCordonedBy (controller) names the incident that cordoned
	// the node, so that only gpuheal undoes a cordon gpuheal made.
	AnnotationCordonedBy = "gpuheal.io/cordoned-by"
	// AnnotationWasUnschedulable (controller) records that the node was
	// already cordoned by someone else when gpuheal cordoned it.
	AnnotationWasUnschedulable = "gpuheal.io/was-unschedulable"
	// AnnotationReplaceToken (controller) is the idempotency token of a
	// replacement asked of Karpenter or Cluster API.
	AnnotationReplaceToken = "gpuheal.io/replace-token"
	// AnnotationReplaceNodeClaim (controller) is the NodeClaim deleted for
	// a Karpenter replacement.
	AnnotationReplaceNodeClaim = "gpuheal.io/replace-nodeclaim"
	// AnnotationReplaceMachine (controller) is the namespace/name of the
	// Cluster API Machine deleted for a replacement.
	AnnotationReplaceMachine = "gpuheal.io/replace-machine"

	// AnnotationRemediation (operator) set to RemediationDisabled opts a
	// node out of remediation.
	AnnotationRemediation = "gpuheal.io/remediation"
	RemediationDisabled   = "disabled"
)

// Keys the kwok provider (simulation) writes; the sim fleet reads them to
// play a machine that reboots or is replaced.
const (
	// LabelKwokBooting is set while a simulated machine reboots or boots;
	// its agent is down meanwhile, as on a real machine.
	LabelKwokBooting = "gpuheal.io/kwok-booting"
	// LabelKwokReplaces names the node a simulated replacement stands in
	// for: the old node's name, or a hash of it when the name does not fit
	// in a label value, so that a replacement is found without listing
	// every node.
	LabelKwokReplaces = "gpuheal.io/kwok-replaces"
	// AnnotationReplaces names the node a replacement replaces.
	AnnotationReplaces = "gpuheal.io/replaces"
	// AnnotationKwokReadyAt is when a boot finishes (RFC 3339, nanoseconds).
	AnnotationKwokReadyAt = "gpuheal.io/kwok-ready-at"
	// AnnotationKwokRebootToken is the token of the last reboot; it stays
	// after the boot so that a repeat for the same incident does nothing.
	AnnotationKwokRebootToken = "gpuheal.io/kwok-reboot-token"
	// AnnotationKwokReplaceToken is the token of the replace that created
	// a node.
	AnnotationKwokReplaceToken = "gpuheal.io/kwok-replace-token"
	// AnnotationKwokFaultPersists="true" (tests, the demo) makes a boot
	// leave the GPU condition False, as if the hardware were still broken,
	// so that a reboot that does not help escalates.
	AnnotationKwokFaultPersists = "gpuheal.io/kwok-fault-persists"
	// AnnotationKwokScaleInProtected="true" marks a node that a simulated
	// scale-in keeps, as Auto Scaling's instance scale-in protection does.
	AnnotationKwokScaleInProtected = "gpuheal.io/kwok-scale-in-protected"
)

// The checkpoint handshake of drain mode CheckpointThenEvict
// (docs/remediation.md, "Drain modes"): the controller writes the request
// on each pod it waits on; the workload answers on its own pod.
const (
	// AnnotationCheckpointRequestedAt (controller, on a pod) is when the
	// checkpoint was asked for (RFC 3339).
	AnnotationCheckpointRequestedAt = "gpuheal.io/checkpoint-requested-at"
	// AnnotationCheckpointDeadline (controller, on a pod) is when the pod
	// is evicted at the latest (RFC 3339).
	AnnotationCheckpointDeadline = "gpuheal.io/checkpoint-deadline"
	// AnnotationCheckpointReason (controller, on a pod) says why: the
	// incident, its node and the fault.
	AnnotationCheckpointReason = "gpuheal.io/checkpoint-reason"
	// AnnotationCheckpointDone (workload, on its pod) is when its
	// checkpoint was saved (RFC 3339); one not after the request is stale.
	AnnotationCheckpointDone = "gpuheal.io/checkpoint-done"
	// AnnotationCheckpointURL (workload, on its pod) is where the
	// controller also POSTs the request as JSON: http:// to the pod's own
	// IP or a Service of the pod's namespace (<svc>.<ns>.svc), nothing else.
	AnnotationCheckpointURL = "gpuheal.io/checkpoint-url"
	// EventReasonCheckpointRequested: the Normal Event on the pod.
	EventReasonCheckpointRequested = "CheckpointRequested"
	// ReasonWorkloadWait: DrainBlocked's reason while the drain waits on
	// pods under their drain mode.
	ReasonWorkloadWait = "WorkloadWait"
	// Outcomes of a WorkloadWait.
	WaitCheckpointDone = "CheckpointDone"
	WaitExited         = "Exited"
	WaitGone           = "Gone"
	WaitTimedOut       = "WaitTimedOut"
	WaitDeleted        = "Deleted"
	// Condition reasons that say the GPU is gone: nothing can be waited
	// for (the agent's default rules: Xid 79, fallen off the bus, and a
	// GPU missing from the driver).
	ReasonNvidiaXID79      = "NvidiaXID79Error"
	ReasonNvidiaGPUMissing = "NvidiaGPUMissing"
)

// The single-GPU reset (api/v1alpha1/gpureset_types.go).
const (
	// AnnotationGPUFaults (agent) is JSON of GPUFaultReport: the node's
	// faulty GPUs and the pods that hold them.
	AnnotationGPUFaults = "gpuheal.io/gpu-faults"
	// AnnotationGPUReset (agent) is JSON of GPUResetReport: the agent's
	// answer to the last reset request of a NodeRemediation of its node.
	AnnotationGPUReset = "gpuheal.io/gpu-reset"
	// LabelNode (controller) on a NodeRemediation is its node's name as
	// NodeLabelValue gives it (cut past 63 characters, as LabelCheckNode):
	// the agent watches only its own node's incidents by it.
	LabelNode = "gpuheal.io/node"
	// EventReasonBadGPUFaults: the node's AnnotationGPUFaults is not a
	// GPUFaultReport the controller can use; the incident reboots instead
	// of resetting a GPU.
	EventReasonBadGPUFaults = "BadGPUFaults"
	// EventReasonLemon: the incident's machine or GPU is a repeat
	// offender; the Event lists its incidents and what is done instead.
	EventReasonLemon = "LemonRetired"
	// EventReasonBadGPUReset: the node's AnnotationGPUReset answers the
	// incident's request with something the controller cannot accept; the
	// reset counts as failed.
	EventReasonBadGPUReset = "BadGPUReset"
	// ReasonGPUReset: the incident ended with the GPUs reset and healthy.
	ReasonGPUReset = "GPUReset"
	// ReasonResetting: the reset is requested from the node's agent.
	ReasonResetting = "Resetting"
	// ReasonResetFailed: the reset failed or timed out; escalating.
	ReasonResetFailed = "GPUResetFailed"
	// ReasonPartialDrain: only the faulty GPUs' pods are evicted.
	ReasonPartialDrain = "PartialDrain"
	// ReasonWholeNodeDrain: the GPUs' pods could not be known alone.
	ReasonWholeNodeDrain = "WholeNodeDrain"
	// ResourceNvidiaMIGPrefix starts the MIG resources of NVIDIA's device
	// plugin (nvidia.com/mig-1g.10gb, …).
	ResourceNvidiaMIGPrefix = "nvidia.com/mig-"
)

// TaintUnhealthy (controller) keeps new work off a node in remediation.
const TaintUnhealthy = "gpuheal.io/unhealthy"

// The health gate (RemediationPolicy spec.validation).
const (
	// TaintValidating (NoSchedule) keeps work off a node that has not yet
	// passed its policy's checks: a joining node gets it from the agent's
	// first write (--join-gate) or a startup taint of its node group, and
	// only the controller takes it away, on a pass.
	TaintValidating = "gpuheal.io/validating"
	// AnnotationValidatedAt (controller) is when the node last passed its
	// policy's checks (RFC 3339); the agent never taints a node that has it.
	AnnotationValidatedAt = "gpuheal.io/validated-at"
	// AnnotationAgentChecks (agent) is the agent's report of its checks,
	// JSON of AgentChecks.
	AnnotationAgentChecks = "gpuheal.io/agent-checks"
	// AnnotationGateRun (controller) is the record of the node's last join
	// or idle check run: JSON of its purpose, attempt, start and end, and
	// the CheckResult of each check (docs/health-gate.md).
	AnnotationGateRun = "gpuheal.io/gate-run"
	// LabelCheck is on a check's Job and Pod: the check's name.
	LabelCheck = "gpuheal.io/check"
	// LabelCheckKind is on a check's Job and Pod: its CheckKind.
	LabelCheckKind = "gpuheal.io/check-kind"
	// LabelCheckNode is on a check's Job and Pod: the node it tests, for
	// a name of at most 63 characters (a label value's limit); a longer
	// name is cut to 52 and followed by "-" and 10 hex of its sha256.
	// AnnotationCheckNodeName always holds the whole name.
	LabelCheckNode = "gpuheal.io/check-node"
	// AnnotationCheckNodeName is on a check's Job and Pod: the name of the
	// node it tests, whole.
	AnnotationCheckNodeName = "gpuheal.io/check-node-name"
	// LabelCheckPurpose is on a check's Job and Pod: repair (an incident's
	// Validating phase), join or idle.
	LabelCheckPurpose = "gpuheal.io/check-purpose"
	// AnnotationCheckIncident is on a check's Job: the NodeRemediation it
	// belongs to, for purpose repair.
	AnnotationCheckIncident = "gpuheal.io/check-incident"
	// PriorityClassIdleCheck (chart) is the lowest priority, preempting
	// nothing: idle checks give way to any workload.
	PriorityClassIdleCheck = "gpuheal-idle-check"
)

// Purposes of a check (LabelCheckPurpose).
const (
	CheckPurposeRepair = "repair"
	CheckPurposeJoin   = "join"
	CheckPurposeIdle   = "idle"
)

// Node condition types the agent owns. True means healthy for the first
// three, which are the names EKS node auto repair (and Karpenter, for the
// first two) act on: the agent publishes them only with
// --condition-types=eks (its own names are
// ConditionGPUHealAcceleratorHealthy, ConditionGPUHealKernelHealthy and
// ConditionGPUHealNetworkingHealthy, below). GPUFailurePredicted is True
// while a failure is predicted.
const (
	ConditionAcceleratedHardwareReady = "AcceleratedHardwareReady"
	ConditionKernelReady              = "KernelReady"
	ConditionNetworkingReady          = "NetworkingReady"
	ConditionGPUFailurePredicted      = "GPUFailurePredicted"
)

// Reasons of the agent's node conditions that do not come from a rule (a
// rule's reason is in its config: default-rules.yaml of the analyzer).
const (
	ReasonNoProblemDetected   = "NoProblemDetected"
	ReasonProblemDetected     = "ProblemDetected"
	ReasonNoFailurePredicted  = "NoFailurePredicted"
	ReasonGPUFailurePredicted = "GPUFailurePredicted"
	ReasonPredictorOff        = "PredictorOff"
)

// Reasons of the Events the agent writes on its Node, besides the rules'
// own reasons (a warning problem's Event has its rule's reason).
const (
	// EventReasonGPUFailurePredicted (agent): a GPU's failure risk
	// crossed the predictor's threshold.
	EventReasonGPUFailurePredicted = "GPUFailurePredicted"
)

// Keys NVIDIA's device plugin and GPU feature discovery publish on GPU
// Nodes (the test fleet plays them); gpuheal only reads them. The CLI and
// the status page count a node's GPUs from the resource, else the label;
// the agent expects gpu.count GPUs and reports fewer found as missing.
const (
	ResourceNvidiaGPU     = "nvidia.com/gpu"
	LabelNvidiaGPUCount   = "nvidia.com/gpu.count"
	LabelNvidiaGPUProduct = "nvidia.com/gpu.product"
)

// Kwok's own annotation: kwok simulates the nodes that carry it with this
// value (testenv and the demo start kwok with this selector). The kwok
// provider takes it away for a reboot and hands it back when the boot ends.
const (
	AnnotationKwokManaged = "kwok.x-k8s.io/node"
	KwokManagedValue      = "fake"
)

// Reasons of the node conditions the kwok provider (simulation) writes: a
// simulated reboot or boot holds Ready False, a finished boot reports the
// agent's conditions healthy, or the GPU's still failing.
const (
	ReasonKwokRebooting     = "Rebooting"
	ReasonKwokBooting       = "Booting"
	ReasonKwokSimulatedBoot = "SimulatedBoot"
	ReasonKwokFaultPersists = "SimulatedFaultPersists"
)

// Condition types of a NodeRemediation (controller).
const (
	// ConditionAdmitted: False while the breaker, maxParallel or pause
	// holds the incident in Pending; the reason says which.
	ConditionAdmitted = "Admitted"
	// ConditionDryRun: True when the policy is in dry run; the message is
	// what would have been done.
	ConditionDryRun = "DryRun"
	// ConditionDrainBlocked: True while an eviction is refused (PDB).
	ConditionDrainBlocked = "DrainBlocked"
)

// ConditionBreakerOpen (controller) on a RemediationPolicy is True while
// more of its nodes are unhealthy than maxUnhealthy allows.
const ConditionBreakerOpen = "BreakerOpen"

// Reasons the controller writes: a NodeRemediation's status.reason (why it
// entered its phase), which is also the reason of the Event on the incident
// for that step; the reasons of NodeRemediation and RemediationPolicy
// conditions; and the reasons of the controller's other Events. The Node's
// own Event for a step is EventReasonRemediationPrefix + the phase, e.g.
// RemediationCordoned.
const (
	// Phase reasons: how an incident moved on.
	ReasonDecided           = "Decided"
	ReasonCordoned          = "Cordoned"
	ReasonDraining          = "Draining"
	ReasonDrained           = "Drained"
	ReasonDrainTimeout      = "DrainTimeout"
	ReasonRebooting         = "Rebooting"
	ReasonReplacing         = "Replacing"
	ReasonRebootUnsupported = "RebootUnsupported"
	ReasonRebootDidNotHeal  = "RebootDidNotHeal"
	ReasonVerifying         = "Verifying"
	ReasonNodeGone          = "NodeGone"
	// ReasonValidating: the node is healthy again and runs the health
	// gate's checks; ReasonValidationFailed: a check failed or could not
	// say, and the incident escalates (or fails when nothing is left).
	ReasonValidating       = "Validating"
	ReasonValidationFailed = "ValidationFailed"
	// Phase reasons: how an incident ended.
	ReasonRecovered      = "Recovered"
	ReasonReplaced       = "Replaced"
	ReasonCordonOnly     = "CordonOnly"
	ReasonNodeDeleted    = "NodeDeleted"
	ReasonOptedOut       = "OptedOut"
	ReasonDuplicate      = "Duplicate"
	ReasonActionIgnore   = "ActionIgnore"
	ReasonPolicyDeleted  = "PolicyDeleted"
	ReasonReleased       = "Released"
	ReasonNoProvider     = "NoProvider"
	ReasonUnsupported    = "Unsupported"
	ReasonProviderError  = "ProviderError"
	ReasonReplaceTimeout = "ReplaceTimeout"

	// Condition reasons (Admitted, DryRun, DrainBlocked; and BreakerOpen
	// of a policy). A hold's reason is also its Event's.
	ReasonAdmitted         = "Admitted"
	ReasonDryRun           = "DryRun"
	ReasonDryRunEnded      = "DryRunEnded"
	ReasonPaused           = "Paused"
	ReasonBreakerOpen      = "BreakerOpen"
	ReasonMaxParallel      = "MaxParallel"
	ReasonEvictionRefused  = "EvictionRefused"
	ReasonEvicting         = "Evicting"
	ReasonWithinLimit      = "WithinLimit"
	ReasonTooManyUnhealthy = "TooManyUnhealthy"
	// ReasonForceDeleted is the audit reason of a pod deleted, not
	// evicted, after the drain timeout (onTimeout: ForceDelete).
	ReasonForceDeleted = "ForceDeleted"

	// Event reasons of no phase.
	EventReasonIncidentOpened = "IncidentOpened"
	EventReasonPolicyConflict = "PolicyConflict"
	EventReasonBreakerOpened  = "BreakerOpened"
	EventReasonBreakerClosed  = "BreakerClosed"
	// EventReasonBadRecommendation: the node's AnnotationRecommendedActions
	// is not a JSON object of known actions; the incident goes on without
	// the agent's advice.
	EventReasonBadRecommendation = "BadRecommendedActions"
	EventReasonRemediationPrefix = "Remediation"
	// EventReasonValidationPassed and EventReasonValidationFailed: a health
	// gate check finished (on the NodeRemediation and the node it tested);
	// Failed also for an Error outcome.
	EventReasonValidationPassed = "ValidationPassed"
	EventReasonValidationFailed = "ValidationFailed"
	// EventReasonValidationSkipped: an idle check gave way to a workload
	// (its pod was preempted or deleted); it runs again an interval later.
	EventReasonValidationSkipped = "ValidationSkipped"
)

// Audit log (verifiable, signed tree heads).
const (
	// AuditHeadConfigMap is the ConfigMap, in the controller's namespace,
	// where the controller publishes each signed audit tree head; its
	// AuditHeadKey holds the signed note, AuditVerifierKeyKey the public key
	// (for reading only: verify with a key kept elsewhere).
	AuditHeadConfigMap  = "gpuheal-audit-head"
	AuditHeadKey        = "head"
	AuditVerifierKeyKey = "verifier-key"
	// AuditSigningKeySecret holds the signing key, in keys
	// AuditSignerKeyKey (secret) and AuditVerifierKeyKey (public).
	AuditSigningKeySecret = "gpuheal-audit-signing-key"
	AuditSignerKeyKey     = "signer-key"
)

// Provider ownership checks: keys of other projects the
// providers read, and what the controller says when a provider refuses.
const (
	// LabelClusterAPIControlPlane (Cluster API) marks a control-plane
	// Machine; the clusterapi provider never deletes one.
	LabelClusterAPIControlPlane = "cluster.x-k8s.io/control-plane"
	// ReasonNotOwned (controller) ends an incident whose provider refused
	// to delete the machine the node points at, because that machine's
	// status does not name the node (or it is a control-plane Machine).
	// It is the Event reason and the audit reason of the refusal.
	ReasonNotOwned = "MachineNotOwned"
)

// Correlated faults (controller): incidents are grouped by cause, and a
// cause that strikes too many nodes within a window opens a breaker that
// holds its incidents until a person closes it.
const (
	// Node labels the cause is read from, besides the Node's nodeInfo
	// (kernel version, OS image) and the condition's type and reason.
	// NVIDIA GPU feature discovery publishes the driver version; Kubernetes
	// the instance type and zone; EKS managed node groups the AMI id.
	LabelNvidiaDriverVersion = "nvidia.com/cuda.driver-version.full"
	LabelNvidiaDriverMajor   = "nvidia.com/cuda.driver.major"
	LabelNvidiaDriverMinor   = "nvidia.com/cuda.driver.minor"
	LabelNvidiaDriverRev     = "nvidia.com/cuda.driver.rev"
	LabelInstanceType        = "node.kubernetes.io/instance-type"
	LabelZone                = "topology.kubernetes.io/zone"
	LabelEKSNodegroupImage   = "eks.amazonaws.com/nodegroup-image"

	// AnnotationCauseBreakersClosedAt (operator) on a RemediationPolicy is an
	// RFC 3339 time: every cause breaker of the policy opened before it is
	// closed, and only incidents opened after it count towards a new one.
	AnnotationCauseBreakersClosedAt = "gpuheal.io/cause-breakers-closed-at"

	// ReasonCauseBreakerOpen: the Admitted condition's reason while an
	// incident is held by its cause's breaker.
	ReasonCauseBreakerOpen = "CauseBreakerOpen"
	// EventReasonCauseBreakerOpened and EventReasonCauseBreakerClosed are
	// the policy's Events when a cause breaker opens and when a person
	// closes it.
	EventReasonCauseBreakerOpened = "CauseBreakerOpened"
	EventReasonCauseBreakerClosed = "CauseBreakerClosed"
	// EventReasonBadBreakerClose: AnnotationCauseBreakersClosedAt is not an
	// RFC 3339 time; no breaker is closed.
	EventReasonBadBreakerClose = "BadCauseBreakersClosedAt"
)

// ReasonPolicyMismatch (controller) ends a NodeRemediation, Cancelled,
// that does not name the one policy selecting its node in both
// spec.policyName and the gpuheal.io/policy label, or whose trigger is not
// one of that policy's unhealthy conditions shown by the node: an incident
// made by hand cannot choose a laxer policy or escape the policy's limits.
const ReasonPolicyMismatch = "PolicyMismatch"

// GPU Operator driver upgrades (issue 22, item 7). The GPU Operator's
// upgrade controller (github.com/NVIDIA/k8s-operator-libs, pkg/upgrade/
// consts.go: UpgradeStateLabelKeyFmt "nvidia.com/%s-driver-upgrade-state"
// with the component "gpu", and the UpgradeState* values) walks each node
// through these states; DriverUpgradeMaintenance and
// DriverUpgradeReleasesDriver (driverupgrade.go) say what gpuheal makes of
// each.
const (
	LabelNvidiaDriverUpgradeState = "nvidia.com/gpu-driver-upgrade-state"

	DriverUpgradeRequired                = "upgrade-required"
	DriverUpgradeCordonRequired          = "cordon-required"
	DriverUpgradeWaitForJobsRequired     = "wait-for-jobs-required"
	DriverUpgradePodDeletionRequired     = "pod-deletion-required"
	DriverUpgradeDrainRequired           = "drain-required"
	DriverUpgradeNodeMaintenanceRequired = "node-maintenance-required"
	DriverUpgradePostMaintenanceRequired = "post-maintenance-required"
	DriverUpgradePodRestartRequired      = "pod-restart-required"
	DriverUpgradeValidationRequired      = "validation-required"
	DriverUpgradeUncordonRequired        = "uncordon-required"
	DriverUpgradeDone                    = "upgrade-done"
	DriverUpgradeFailed                  = "upgrade-failed"

	// EventReasonDriverUpgradeInProgress (controller) on a Node: the GPU
	// Operator is upgrading its driver; no incident opens and the breakers
	// do not count it until the upgrade ends. Once per upgrade.
	EventReasonDriverUpgradeInProgress = "DriverUpgradeInProgress"
)

// Agent GPU side (driver and GPU count): node labels other projects
// publish that tell the agent how many GPUs a node should have, read
// before the NVIDIA GPU Operator's LabelNvidiaGPUCount and the
// instance-type table (internal/agent/gpucount.go).
const (
	// LabelKarpenterInstanceGPUCount (Karpenter's AWS provider) is the
	// GPU count of the node's instance type.
	LabelKarpenterInstanceGPUCount = "karpenter.k8s.aws/instance-gpu-count"
	// LabelEKSInstanceGPUCount (EKS Auto Mode) is the same fact.
	LabelEKSInstanceGPUCount = "eks.amazonaws.com/instance-gpu-count"
)

// Provider preflight (controller): every few minutes each policy's provider
// proves it can act on the policy's nodes; the result is the policy's
// ProviderReady condition, and while it is False no new incident of the
// policy leaves Pending.
const (
	// ConditionProviderReady on a RemediationPolicy: True when the last
	// preflight of every provider its nodes use passed.
	ConditionProviderReady = "ProviderReady"
	// ReasonPreflightPassed: every check passed; the message says what was
	// proven (the AWS role, the actions tried).
	ReasonPreflightPassed = "PreflightPassed"
	// ReasonPermissionDenied: the cloud or the API server refused an action
	// the provider needs; the message names the action and the identity.
	ReasonPermissionDenied = "PermissionDenied"
	// ReasonCredentialsUnavailable: the provider found no usable identity
	// (AWS credentials missing, expired or invalid).
	ReasonCredentialsUnavailable = "CredentialsUnavailable"
	// ReasonNotInAutoScalingGroup: nodes the aws provider would replace are
	// in no Auto Scaling group, so a replace would bring no successor.
	ReasonNotInAutoScalingGroup = "NotInAutoScalingGroup"
	// ReasonProviderNotConfigured: the provider a node needs is not enabled
	// in this controller (--providers).
	ReasonProviderNotConfigured = "ProviderNotConfigured"
	// ReasonPreflightFailed: a check failed for another reason (the cloud
	// did not answer, a node's providerID cannot be read).
	ReasonPreflightFailed = "PreflightFailed"
	// ReasonProviderNotReady: the Admitted condition's reason while an
	// incident is held because its policy's ProviderReady is False.
	ReasonProviderNotReady = "ProviderNotReady"
	// EventReasonProviderNotReady and EventReasonProviderReady are the
	// policy's Events when ProviderReady turns False and back True.
	EventReasonProviderNotReady = "ProviderNotReady"
	EventReasonProviderReady    = "ProviderReady"
)

// Karpenter-launched nodes (controller): a node Karpenter launched is
// replaced through its NodeClaim, whatever cloud it runs on.
const (
	// LabelKarpenterNodePool is the label Karpenter puts on every node it
	// launches.
	LabelKarpenterNodePool = "karpenter.sh/nodepool"
)

// Living beside other remediators: the agent's condition type names, and
// the marks of other systems that are already repairing a node.
const (
	// ConditionGPUHealAcceleratorHealthy and ConditionGPUHealKernelHealthy
	// are the agent's GPU and kernel conditions by default (True means
	// healthy, like the EKS names). They carry a GPUHeal prefix because
	// EKS node auto repair and Karpenter's node repair act on conditions by
	// exact type name: AcceleratedHardwareReady and KernelReady
	// (ConditionAcceleratedHardwareReady, ConditionKernelReady) make those
	// systems replace the node after 10 and 30 minutes, even while gpuheal
	// is in dry run; names of our own are seen by gpuheal alone, and the
	// prefix says in `kubectl describe node` whose they are.
	ConditionGPUHealAcceleratorHealthy = "GPUHealAcceleratorHealthy"
	ConditionGPUHealKernelHealthy      = "GPUHealKernelHealthy"
	// ConditionGPUHealNetworkingHealthy is the agent's RDMA fabric
	// condition (InfiniBand, RoCE, EFA): a node whose network breaks a
	// training job is as unusable as one whose GPU does. Its EKS name is
	// ConditionNetworkingReady.
	ConditionGPUHealNetworkingHealthy = "GPUHealNetworkingHealthy"

	// ConditionTypesGPUHeal and ConditionTypesEKS are the values of the
	// agent's --condition-types (chart: agent.conditionTypes).
	ConditionTypesGPUHeal = "gpuheal"
	ConditionTypesEKS     = "eks"

	// ReasonOtherRemediator (controller) ends an incident, Cancelled, on a
	// node another system is already repairing; the message says which
	// and by what mark. It is the Event reason and the audit reason.
	ReasonOtherRemediator = "OtherRemediator"

	// TaintKarpenterDisrupted (Karpenter v1) is on a node Karpenter is
	// disrupting (consolidation, drift, expiry and its node repair);
	// TaintKarpenterDisruption is the same mark of Karpenter before v1.
	TaintKarpenterDisrupted  = "karpenter.sh/disrupted"
	TaintKarpenterDisruption = "karpenter.sh/disruption"
)

// AgentConditionTypes are the type names the agent publishes its GPU,
// kernel and network conditions under.
//
// +kubebuilder:object:generate=false
type AgentConditionTypes struct{ GPU, Kernel, Network string }

// ConditionTypeSets are the allowed values of --condition-types.
var ConditionTypeSets = []string{ConditionTypesGPUHeal, ConditionTypesEKS}

// AgentConditionTypesFor returns the names of the set named: "gpuheal"
// (gpuheal's own, the default) or "eks" (the names EKS node auto repair
// and Karpenter act on, an explicit opt-in).
func AgentConditionTypesFor(set string) (AgentConditionTypes, bool) {
	switch set {
	case ConditionTypesGPUHeal, "":
		return AgentConditionTypes{GPU: ConditionGPUHealAcceleratorHealthy, Kernel: ConditionGPUHealKernelHealthy,
			Network: ConditionGPUHealNetworkingHealthy}, true
	case ConditionTypesEKS:
		return AgentConditionTypes{GPU: ConditionAcceleratedHardwareReady, Kernel: ConditionKernelReady,
			Network: ConditionNetworkingReady}, true
	}
	return AgentConditionTypes{}, false
}

// Publish maps one of gpuheal's own condition types to its name in t;
// any other type is returned as it is.
func (t AgentConditionTypes) Publish(own string) string {
	switch own {
	case ConditionGPUHealAcceleratorHealthy:
		return t.GPU
	case ConditionGPUHealKernelHealthy:
		return t.Kernel
	case ConditionGPUHealNetworkingHealthy:
		return t.Network
	}
	return own
}

// IsAgentGPUCondition and IsAgentKernelCondition report whether a node
// condition type is the agent's GPU or kernel condition under either set
// of names: readers (fleet view, status, the kwok provider) follow
// whichever the agents publish.
func IsAgentGPUCondition(t string) bool {
	return t == ConditionGPUHealAcceleratorHealthy || t == ConditionAcceleratedHardwareReady
}

// IsAgentKernelCondition reports the same for the kernel condition.
func IsAgentKernelCondition(t string) bool {
	return t == ConditionGPUHealKernelHealthy || t == ConditionKernelReady
}

// IsAgentNetworkCondition reports the same for the network condition.
func IsAgentNetworkCondition(t string) bool {
	return t == ConditionGPUHealNetworkingHealthy || t == ConditionNetworkingReady
}

// IsAgentHealthCondition is true for any of the agent's three health
// conditions under either set of names.
func IsAgentHealthCondition(t string) bool {
	return IsAgentGPUCondition(t) || IsAgentKernelCondition(t) || IsAgentNetworkCondition(t)
}
