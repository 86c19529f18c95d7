package remediation

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// A join or idle check has no incident whose status could hold its
// results, so the node holds them: the annotation AnnotationGateRun is the
// record of the node's last run. It lives and dies with the node, a
// restarted controller reads it back and goes on with the check under way
// (it finds the check's Job by its name, keyed by the node's UID and the
// run's attempt), and nodes never contend for one object as they would in
// the policy's status. Only the controller writes it; the agent's node
// policy refuses it any annotation but its own.

// gateRun is the JSON of AnnotationGateRun.
type gateRun struct {
	// Purpose: join or idle (v1alpha1.CheckPurpose*).
	Purpose string `json:"purpose"`
	// Policy whose checks run.
	Policy string `json:"policy"`
	// Attempt counts the node's runs from 1; with the node's UID it names
	// the run's Jobs, so a later run never reads an earlier one's result.
	Attempt int32       `json:"attempt"`
	Started metav1.Time `json:"started"`
	// Checks: one result per check begun, in the policy's order.
	Checks []v1alpha1.CheckResult `json:"checks,omitempty"`
	// Ended is set once the run is over, with its Outcome (Passed, Failed,
	// Error or Skipped) and a Message.
	Ended   *metav1.Time `json:"ended,omitempty"`
	Outcome string       `json:"outcome,omitempty"`
	Message string       `json:"message,omitempty"`
}

// runSkipped is the outcome of a run that gave way: its pod was preempted
// or deleted, or an incident took the node.
const runSkipped = "Skipped"

// maxGateRun bounds the annotation: 16 checks with their messages and
// short excerpts take well under it.
const maxGateRun = 64 << 10

// maxRunExcerpt is what of a check's excerpt the node keeps: the Events
// carry the message, and every node is read by every watcher of nodes.
const maxRunExcerpt = 512

// running reports whether the run is under way.
func (g *gateRun) running() bool { return g != nil && g.Ended == nil }

// result is the run's result of check name, or nil.
func (g *gateRun) result(name string) *v1alpha1.CheckResult {
	for i := range g.Checks {
		if g.Checks[i].Name == name {
			return &g.Checks[i]
		}
	}
	return nil
}

// nodeRun is the node's run record: nil without one. A record that does
// not parse is returned as the error beside nil.
func nodeRun(n *corev1.Node) (*gateRun, error) {
	raw, ok := n.Annotations[v1alpha1.AnnotationGateRun]
	if !ok {
		return nil, nil
	}
	return parseGateRun(raw)
}

// parseGateRun decodes AnnotationGateRun strictly. Someone other than the
// controller may have written it (an operator, a node without the agent's
// node policy), so it is read as outside input.
func parseGateRun(raw string) (*gateRun, error) {
	if len(raw) > maxGateRun {
		return nil, fmt.Errorf("annotation %s: %d bytes, more than the %d a run record may have", v1alpha1.AnnotationGateRun, len(raw), maxGateRun)
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var g gateRun
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("annotation %s: not a record of a check run: %w", v1alpha1.AnnotationGateRun, jsonAt(raw, dec, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("annotation %s: data after the record at byte %d", v1alpha1.AnnotationGateRun, dec.InputOffset())
	}
	switch {
	case g.Purpose != v1alpha1.CheckPurposeJoin && g.Purpose != v1alpha1.CheckPurposeIdle:
		return nil, fmt.Errorf("annotation %s: purpose %q, want %s or %s", v1alpha1.AnnotationGateRun, truncate(g.Purpose, 32), v1alpha1.CheckPurposeJoin, v1alpha1.CheckPurposeIdle)
	case g.Attempt < 1:
		return nil, fmt.Errorf("annotation %s: attempt %d, want 1 or more", v1alpha1.AnnotationGateRun, g.Attempt)
	case g.Started.IsZero():
		return nil, fmt.Errorf("annotation %s: the run has no start", v1alpha1.AnnotationGateRun)
	case len(g.Checks) > 16:
		return nil, fmt.Errorf("annotation %s: %d checks, more than a policy's 16", v1alpha1.AnnotationGateRun, len(g.Checks))
	case g.Ended == nil && g.Outcome != "":
		return nil, fmt.Errorf("annotation %s: outcome %q of a run that has not ended", v1alpha1.AnnotationGateRun, truncate(g.Outcome, 32))
	}
	switch g.Outcome {
	case "", string(v1alpha1.CheckPassed), string(v1alpha1.CheckFailed), string(v1alpha1.CheckError), runSkipped:
	default:
		return nil, fmt.Errorf("annotation %s: unknown outcome %q", v1alpha1.AnnotationGateRun, truncate(g.Outcome, 32))
	}
	for i, c := range g.Checks {
		if c.Name == "" || g.result(c.Name) != &g.Checks[i] {
			return nil, fmt.Errorf("annotation %s: check %d has no name or a name used before", v1alpha1.AnnotationGateRun, i)
		}
	}
	return &g, nil
}

// encode is the annotation's value.
func (g *gateRun) encode() string {
	b, err := json.Marshal(g)
	if err != nil { // a struct of strings and times always marshals
		panic(err)
	}
	return string(b)
}
