package fleetview

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// ConditionTypes are the node conditions a state is read from: the
// agent's three, under gpuheal's names and under the EKS names (the agent
// publishes one set, by --condition-types; the EKS node monitoring agent
// the EKS one), and the kubelet's.
var ConditionTypes = []corev1.NodeConditionType{
	v1alpha1.ConditionGPUHealAcceleratorHealthy, v1alpha1.ConditionGPUHealKernelHealthy, v1alpha1.ConditionGPUHealNetworkingHealthy,
	v1alpha1.ConditionAcceleratedHardwareReady, v1alpha1.ConditionKernelReady, v1alpha1.ConditionNetworkingReady, corev1.NodeReady,
}

// Build makes the view of nodes, with the open incident of each from rems
// (any order; ended ones are skipped). Rows come sorted by name, so that a
// node keeps its place on a map; Policies is empty (see PoliciesOf). It
// neither keeps nor changes the objects.
func Build(nodes []corev1.Node, rems []v1alpha1.NodeRemediation) View {
	open := OpenIncidents(rems)
	v := View{Nodes: make([]Row, 0, len(nodes)), Policies: []Policy{}}
	for i := range nodes {
		r := RowOf(&nodes[i], open[nodes[i].Name])
		v.Nodes = append(v.Nodes, r)
		v.Summary.add(r)
	}
	slices.SortFunc(v.Nodes, func(a, b Row) int { return strings.Compare(a.Name, b.Name) })
	return v
}

func (s *Summary) add(r Row) {
	s.Nodes++
	s.GPUs += r.GPUs
	if r.HealthyGPUs != nil {
		s.HealthyGPUs += *r.HealthyGPUs
	}
	switch r.State {
	case StateUnhealthy:
		s.Unhealthy++
	case StateRemediating:
		s.Remediating++
	case StateCordoned:
		s.Cordoned++
	case StateWarning:
		s.Warning++
	default:
		s.Healthy++
	}
}

// OpenIncidents maps each node to its newest incident that has not ended.
func OpenIncidents(rems []v1alpha1.NodeRemediation) map[string]*v1alpha1.NodeRemediation {
	open := map[string]*v1alpha1.NodeRemediation{}
	for i := range rems {
		r := &rems[i]
		if r.Status.Phase.Terminal() {
			continue
		}
		if prev := open[r.Spec.NodeName]; prev == nil || newer(r, prev) {
			open[r.Spec.NodeName] = r
		}
	}
	return open
}

// newer orders by Opened, then by name so that the choice is stable
// (creation times have whole seconds).
func newer(a, b *v1alpha1.NodeRemediation) bool {
	if c := Opened(a).Compare(Opened(b)); c != 0 {
		return c > 0
	}
	return a.Name < b.Name
}

// Opened is when an incident began: its first phase, recorded with
// microseconds by the controller's clock, else its creation.
func Opened(nr *v1alpha1.NodeRemediation) time.Time {
	if len(nr.Status.Phases) > 0 {
		return nr.Status.Phases[0].Time.Time
	}
	return nr.CreationTimestamp.Time
}

// RowOf is one node's row; open is its open incident, or nil.
func RowOf(n *corev1.Node, open *v1alpha1.NodeRemediation) Row {
	r := Row{Name: n.Name, Tier: n.Labels[v1alpha1.LabelHealthTier], Unschedulable: n.Spec.Unschedulable,
		Conditions: []Condition{}, Created: n.CreationTimestamp.Time, GPUs: gpuTotal(n)}
	if v, err := strconv.Atoi(n.Labels[v1alpha1.LabelGPUHealthyCount]); err == nil && v >= 0 {
		r.HealthyGPUs = &v
	}
	if v, err := strconv.ParseFloat(n.Annotations[v1alpha1.AnnotationHealthScore], 64); err == nil {
		r.Score = &v
	}
	if w, err := strconv.Atoi(n.Annotations[v1alpha1.AnnotationActiveWarnings]); err == nil && w > 0 {
		r.ActiveWarnings = w
	}
	unhealthy := false
	for _, t := range ConditionTypes {
		for _, c := range n.Status.Conditions {
			if c.Type != t {
				continue
			}
			cond := Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message,
				Since: c.LastTransitionTime.Time}
			r.Conditions = append(r.Conditions, cond)
			unhealthy = unhealthy || cond.Bad()
			break
		}
	}
	if open != nil {
		r.Incident, r.Phase, r.Action = open.Name, open.Status.Phase, open.Status.Action
		if r.Phase == "" {
			r.Phase = v1alpha1.PhasePending
		}
	}
	switch {
	case unhealthy:
		r.State = StateUnhealthy
	case open != nil:
		r.State = StateRemediating
	case r.Unschedulable:
		r.State = StateCordoned
	case r.ActiveWarnings > 0 || (r.HealthyGPUs != nil && *r.HealthyGPUs < r.GPUs):
		r.State = StateWarning
	default:
		r.State = StateHealthy
	}
	return r
}

// gpuTotal is the node's GPU capacity, or the GPU-count label when the
// device plugin has not reported (yet).
func gpuTotal(n *corev1.Node) int {
	if q, ok := n.Status.Capacity[v1alpha1.ResourceNvidiaGPU]; ok {
		return int(q.Value())
	}
	v, _ := strconv.Atoi(n.Labels[v1alpha1.LabelNvidiaGPUCount])
	return max(v, 0)
}

// SortWorstFirst orders rows by state, worst first, then lowest score
// (unscored after scored), then name.
func SortWorstFirst(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.State.Rank(), b.State.Rank()), CompareScores(a.Score, b.Score),
			strings.Compare(a.Name, b.Name))
	})
}

// CompareScores orders the lower score first and a missing one last.
func CompareScores(a, b *float64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return cmp.Compare(*a, *b)
}
