package remediation

import (
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// The defaults of RemediationPolicySpec, also written in the CRD schema; a
// policy read from a cache that predates a default still gets it here.
var defaultUnhealthyConditions = []v1alpha1.UnhealthyCondition{
	{Type: v1alpha1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, For: metav1.Duration{Duration: 2 * time.Minute}},
	{Type: v1alpha1.ConditionGPUHealNetworkingHealthy, Status: metav1.ConditionFalse, For: metav1.Duration{Duration: 2 * time.Minute}},
	{Type: string(corev1.NodeReady), Status: metav1.ConditionFalse, For: metav1.Duration{Duration: 10 * time.Minute}},
	{Type: string(corev1.NodeReady), Status: metav1.ConditionUnknown, For: metav1.Duration{Duration: 10 * time.Minute}},
}

// policy is a RemediationPolicy with its defaults filled in and its
// selector parsed once.
type policy struct {
	*v1alpha1.RemediationPolicy
	selector labels.Selector
	// workloads are spec.drain.workloads with their selectors parsed.
	workloads []workloadRule
}

func newPolicy(p *v1alpha1.RemediationPolicy) (*policy, error) {
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("policy %s: nodeSelector: %w", p.Name, err)
	}
	p = p.DeepCopy()
	s := &p.Spec
	if len(s.UnhealthyConditions) == 0 {
		s.UnhealthyConditions = defaultUnhealthyConditions
	}
	e := &s.Escalation
	defaultDuration(&e.Window, 24*time.Hour)
	defaultDuration(&e.RebootTimeout, 15*time.Minute)
	defaultDuration(&e.ReplaceTimeout, 30*time.Minute)
	defaultDuration(&s.Drain.Timeout, 10*time.Minute)
	defaultDuration(&s.RecoveryHold, time.Minute)
	defaultDuration(&s.GPUReset.Timeout, 3*time.Minute)
	if s.GPUReset.PartialDrain == nil {
		yes := true
		s.GPUReset.PartialDrain = &yes
	}
	if s.GPUReset.DeviceTaintEffect == "" {
		s.GPUReset.DeviceTaintEffect = v1alpha1.DeviceTaintEffectNoSchedule
	}
	if s.Drain.OnTimeout == "" {
		s.Drain.OnTimeout = v1alpha1.DrainWait
	}
	if s.Drain.DeleteEmptyDirData == nil {
		yes := true
		s.Drain.DeleteEmptyDirData = &yes
	}
	if s.MaxUnhealthy == nil {
		v := intstr.FromString("20%")
		s.MaxUnhealthy = &v
	}
	defaultDuration(&s.CorrelatedFaults.Window, time.Hour)
	if s.CorrelatedFaults.MaxPerCause == nil {
		v := intstr.FromInt32(3)
		s.CorrelatedFaults.MaxPerCause = &v
	}
	if s.MaxParallel == nil {
		v := intstr.FromInt32(1)
		s.MaxParallel = &v
	}
	workloads, err := parseWorkloads(p.Name, s.Drain.Workloads)
	if err != nil {
		return nil, err
	}
	return &policy{RemediationPolicy: p, selector: sel, workloads: workloads}, nil
}

func defaultDuration(d **metav1.Duration, v time.Duration) {
	if *d == nil {
		*d = &metav1.Duration{Duration: v}
	}
}

func (p *policy) matches(n *corev1.Node) bool { return p.selector.Matches(labels.Set(n.Labels)) }

// maxUnhealthy is the most unhealthy nodes out of matched before the
// breaker opens (percent rounds down: 20% of 4 nodes is 0, so one
// unhealthy node of four is already too many).
func (p *policy) maxUnhealthy(matched int) int {
	return scaled(*p.Spec.MaxUnhealthy, matched, false)
}

// maxPerCause is the most incidents of one cause within the window before
// the cause's breaker opens; at least 1 (a percent of a small fleet rounds
// down to 0, and one failure is never a pattern).
func (p *policy) maxPerCause(matched int) int {
	return max(1, scaled(*p.Spec.CorrelatedFaults.MaxPerCause, matched, false))
}

// maxParallel is how many incidents may be in flight; at least 1, since a
// policy that can never act is better expressed with paused.
func (p *policy) maxParallel(matched int) int {
	return max(1, scaled(*p.Spec.MaxParallel, matched, true))
}

func scaled(v intstr.IntOrString, total int, roundUp bool) int {
	if v.Type == intstr.Int {
		return int(v.IntVal)
	}
	var pct float64
	if _, err := fmt.Sscanf(strings.TrimSuffix(v.StrVal, "%"), "%g", &pct); err != nil {
		return 0 // the schema rejects such values; be conservative anyway
	}
	x := pct * float64(total) / 100
	if roundUp {
		return int(math.Ceil(x))
	}
	return int(math.Floor(x))
}

// unhealthyNow returns the first of the policy's unhealthy conditions that
// the node shows at this moment, however briefly (for the breaker count), or
// nil.
func (p *policy) unhealthyNow(n *corev1.Node) *corev1.NodeCondition {
	for _, uc := range p.Spec.UnhealthyConditions {
		if c := findCondition(n, uc.Type); c != nil && metav1.ConditionStatus(c.Status) == uc.Status {
			return c
		}
	}
	return nil
}

// lists reports whether the policy counts condition t with status s as
// unhealthy.
func (p *policy) lists(t string, s metav1.ConditionStatus) bool {
	for _, uc := range p.Spec.UnhealthyConditions {
		if uc.Type == t && uc.Status == s {
			return true
		}
	}
	return false
}

// unhealthyFor returns the condition that has held long enough to open an
// incident; otherwise how long until the first one would (0 when none is
// pending).
func (p *policy) unhealthyFor(n *corev1.Node, now time.Time) (*corev1.NodeCondition, time.Duration) {
	var wait time.Duration
	for _, uc := range p.Spec.UnhealthyConditions {
		c := findCondition(n, uc.Type)
		if c == nil || metav1.ConditionStatus(c.Status) != uc.Status {
			continue
		}
		left := c.LastTransitionTime.Add(uc.For.Duration).Sub(now)
		if left <= 0 {
			return c, 0
		}
		if wait == 0 || left < wait {
			wait = left
		}
	}
	return nil, wait
}

func findCondition(n *corev1.Node, t string) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// chooseAction applies the policy's action rules to the trigger, then the
// built-in mapping.
func (p *policy) chooseAction(t v1alpha1.Trigger) v1alpha1.Action {
	for _, r := range p.Spec.Actions {
		if r.ConditionType != "" && r.ConditionType != t.Type {
			continue
		}
		if r.Reason != "" && r.Reason != t.Reason {
			continue
		}
		if r.RecommendedAction != "" && r.RecommendedAction != t.RecommendedAction {
			continue
		}
		return r.Action
	}
	switch finding.Action(t.RecommendedAction) {
	case finding.ActionReplace:
		return v1alpha1.ActionReplace
	case finding.ActionResetGPU:
		// The mildest rung: start() makes it a reboot when the agent's
		// GPU fault report does not name a GPU a reset repairs.
		return v1alpha1.ActionResetGPU
	case finding.ActionRestartApp, finding.ActionNone:
		return v1alpha1.ActionIgnore
	}
	return v1alpha1.ActionReboot
}

// optedOut reports whether the operator opted the node out.
func optedOut(n *corev1.Node) bool {
	return n.Annotations[v1alpha1.AnnotationRemediation] == v1alpha1.RemediationDisabled
}
