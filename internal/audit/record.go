package audit

import (
	"fmt"
	"strings"
	"time"
)

// Kind says what a Record records.
type Kind string

// The kinds of step the controller records.
const (
	// Detected: a node showed an unhealthy condition and an incident opened.
	Detected Kind = "Detected"
	// Decided: the policy chose an action (Reason says which rule).
	Decided Kind = "Decided"
	// DryRun: the policy would have acted; nothing was changed.
	DryRun Kind = "DryRun"
	// Held: the incident may not start now (breaker open, paused,
	// maxParallel reached, opted out); Reason says which.
	Held Kind = "Held"
	// Cordoned: the node was marked unschedulable by us.
	Cordoned Kind = "Cordoned"
	// Evicted: one pod (Pod) was evicted.
	Evicted Kind = "Evicted"
	// EvictionBlocked: an eviction was refused (a PDB, HTTP 429).
	EvictionBlocked Kind = "EvictionBlocked"
	// DrainScoped: how much of the node a GPU reset drains; Reason is
	// PartialDrain (only the pods holding the faulty GPUs) or
	// WholeNodeDrain, Message says why.
	DrainScoped Kind = "DrainScoped"
	// CheckpointRequested: a pod (Pod) was asked to checkpoint before its
	// eviction (drain mode CheckpointThenEvict); Message has the deadline.
	CheckpointRequested Kind = "CheckpointRequested"
	// WorkloadWaited: the drain's wait on a pod ended; Reason is the
	// outcome (CheckpointDone, Exited, Gone, WaitTimedOut), Duration the wait.
	WorkloadWaited Kind = "WorkloadWaited"
	// Drained: no evictable pod is left; Duration is the drain's.
	Drained Kind = "Drained"
	// ActionRequested: the provider accepted a reboot or replace
	// (Provider, RequestID).
	ActionRequested Kind = "ActionRequested"
	// ProviderError: the provider refused or failed a request.
	ProviderError Kind = "ProviderError"
	// ResetRequested: the node's agent was asked to reset GPUs (GPUs,
	// RequestID).
	ResetRequested Kind = "ResetRequested"
	// ResetFinished: the agent's answer, or none in time; Reason is the
	// outcome (Succeeded) or why it failed, Message lists the steps,
	// Duration is from the request to the answer.
	ResetFinished Kind = "ResetFinished"
	// Escalated: a repair did not heal the node (a GPU reset failed, a
	// reboot did not heal it); Action says the stronger one taken instead.
	Escalated Kind = "Escalated"
	// CheckFinished: a health gate check was judged on the node (Node:
	// the replacement, after a replace); Reason is its outcome (Passed,
	// Failed, Error), Message names the check, value and floor, Duration
	// is the check's.
	CheckFinished Kind = "CheckFinished"
	// Recovered: the node (or its replacement) is Ready and healthy;
	// Duration is the time to recover.
	Recovered Kind = "Recovered"
	// Uncordoned: our cordon was undone.
	Uncordoned Kind = "Uncordoned"
	// Succeeded, Failed and Cancelled end an incident; Duration is its length.
	Succeeded Kind = "Succeeded"
	Failed    Kind = "Failed"
	Cancelled Kind = "Cancelled"
)

// Kinds lists every Kind this version knows, in the order of an incident.
var Kinds = []Kind{Detected, Decided, DryRun, Held, DrainScoped, Cordoned, CheckpointRequested, WorkloadWaited, Evicted, EvictionBlocked, Drained,
	ResetRequested, ResetFinished, ActionRequested, ProviderError, Escalated, CheckFinished, Recovered, Uncordoned, Succeeded, Failed, Cancelled}

// Severities used by the controller; Severity is free text for others.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Record is one audited step. The caller fills the fields up to DryRun;
// a Store assigns Seq, PrevHash and Hash when it appends the record.
type Record struct {
	// Key makes writes idempotent: a Record whose Key the store already
	// holds is skipped. Derive it with Key(incident, step, n) so that a
	// repeated step after a crash repeats the Key.
	Key string
	// Time of the step; a zero Time is set to the store's clock on Write.
	Time      time.Time
	Incident  string // NodeRemediation name
	Node      string
	Policy    string // RemediationPolicy name
	Kind      Kind
	Phase     string // the incident's phase after the step
	Action    string // ResetGPU, Reboot, Replace, CordonOnly, Ignore
	Reason    string // machine-readable, e.g. BreakerOpen, NvidiaXID79Error
	Message   string // for people
	Provider  string
	RequestID string // the provider's request id
	Pod       string // namespace/name of an evicted pod
	Duration  time.Duration
	GPUs      []string // UUIDs of the GPUs concerned, optional
	Severity  string
	DryRun    bool
	// Machine identifies the hardware of Node (its system UUID, or its
	// cloud instance when there is none), so that a board's history
	// follows the board and not its node name (the lemon rule); "" in
	// records older than the field.
	Machine string

	// Seq numbers the records of one store from 1 without gaps.
	Seq uint64
	// PrevHash is the Hash of record Seq-1 ("" for Seq 1).
	PrevHash string
	// Hash is hex SHA-256 over the canonical encoding of the fields above
	// (Seq included) and PrevHash; see ComputeHash.
	Hash string
}

// Key derives an idempotency key from the incident, the step (a Kind or a
// finer name such as "evict/ns/pod") and an attempt or ordinal n.
func Key(incident, step string, n int) string {
	return fmt.Sprintf("%s/%s/%d", incident, step, n)
}

// Validate reports a record the controller should not have written.
func (r *Record) Validate() error {
	switch {
	case r.Key == "":
		return fmt.Errorf("audit record without key (kind %q, node %q)", r.Kind, r.Node)
	case r.Kind == "":
		return fmt.Errorf("audit record %s without kind", r.Key)
	case strings.ContainsAny(r.Key, "\n\x00"):
		return fmt.Errorf("audit record key %q has a newline or NUL", r.Key)
	}
	return nil
}

// Summary is a one-line description for logs.
func (r *Record) Summary() string {
	return fmt.Sprintf("seq=%d key=%s kind=%s node=%s incident=%s", r.Seq, r.Key, r.Kind, r.Node, r.Incident)
}
