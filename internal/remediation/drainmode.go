package remediation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// The fault's severity bounds every wait of a drain mode: a training job's
// checkpoint is worth waiting for only while waiting does not make the
// outage worse. The bounds are documented in docs/remediation.md, "Drain
// modes".
const (
	// FatalWaitBound is the longest wait for a fatal fault whose GPU is
	// still there: the job is likely stuck or computing on a failing part,
	// so only a short window to save state is worth the node's time.
	FatalWaitBound = 5 * time.Minute
)

// faultSeverity is how bad the incident's fault is, for the drain's waits.
type faultSeverity int

const (
	// severityWarning: a warning-level condition or a predicted failure;
	// the GPU still works, the full configured wait applies.
	severityWarning faultSeverity = iota
	// severityFatal: a fatal fault; waits are cut to FatalWaitBound.
	severityFatal
	// severityGone: the GPU fell off the bus or is missing; nothing on it
	// can save anything, so nothing is waited for (every mode acts as
	// Immediate).
	severityGone
)

func (s faultSeverity) String() string {
	return [...]string{"warning", "fatal", "GPU gone"}[s]
}

// incidentSeverity reads the severity from the condition that opened the
// incident: the controller knows no more than the trigger (the agent's
// conditions carry fatal faults; warnings reach a policy only through a
// condition it lists on purpose, like GPUFailurePredicted).
func incidentSeverity(t v1alpha1.Trigger) faultSeverity {
	switch {
	case t.Reason == v1alpha1.ReasonNvidiaXID79 || t.Reason == v1alpha1.ReasonNvidiaGPUMissing:
		return severityGone
	case t.Type == v1alpha1.ConditionGPUFailurePredicted || t.Reason == v1alpha1.ReasonGPUFailurePredicted,
		strings.HasSuffix(t.Reason, "Warning"):
		return severityWarning
	default:
		return severityFatal
	}
}

// bound caps a configured wait by the severity.
func (s faultSeverity) bound(d time.Duration) time.Duration {
	switch s {
	case severityGone:
		return 0
	case severityFatal:
		return min(d, FatalWaitBound)
	default:
		return d
	}
}

// workloadRule is one entry of spec.drain.workloads, parsed.
type workloadRule struct {
	v1alpha1.WorkloadDrain
	selector labels.Selector // nil: any labels
}

func parseWorkloads(policy string, ws []v1alpha1.WorkloadDrain) ([]workloadRule, error) {
	out := make([]workloadRule, 0, len(ws))
	for i, w := range ws {
		r := workloadRule{WorkloadDrain: w}
		if w.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(w.Selector)
			if err != nil {
				return nil, fmt.Errorf("policy %s: drain.workloads[%d].selector: %w", policy, i, err)
			}
			r.selector = sel
		}
		out = append(out, r)
	}
	return out, nil
}

func (w *workloadRule) matches(p *corev1.Pod) bool {
	if len(w.Namespaces) == 0 && w.selector == nil {
		return false // the schema forbids it; match nothing rather than everything
	}
	if len(w.Namespaces) > 0 && !slices.Contains(w.Namespaces, p.Namespace) {
		return false
	}
	return w.selector == nil || w.selector.Matches(labels.Set(p.Labels))
}

// workloadFor is the first entry matching the pod; nil: Immediate.
func (p *policy) workloadFor(pod *corev1.Pod) *workloadRule {
	for i := range p.workloads {
		if p.workloads[i].matches(pod) {
			return &p.workloads[i]
		}
	}
	return nil
}

// configuredWait is the entry's own wait, before the severity bound.
func (w *workloadRule) configuredWait() time.Duration {
	var d *metav1.Duration
	switch w.Mode {
	case v1alpha1.DrainAllowCompletion:
		d = w.MaxWait
	case v1alpha1.DrainCheckpointThenEvict:
		d = w.Grace
	case v1alpha1.DrainDeleteAfterTimeout:
		d = w.Timeout
	}
	if d == nil {
		return 0
	}
	return d.Duration
}
