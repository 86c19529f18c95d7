package nodestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// PatchConditions writes only our condition types with a strategic merge
// patch on nodes/status: the list merges by type, so the kubelet's and
// other agents' conditions stay untouched. A condition without a
// transition time gets now.
func PatchConditions(ctx context.Context, c rest.Interface, node string, conds []analyzer.ConditionStatus, now time.Time) error {
	list := make([]kubecore.NodeCondition, 0, len(conds))
	for _, s := range conds {
		since := s.LastTransitionTime
		if since.IsZero() {
			since = now
		}
		msg := s.Message
		switch {
		case s.Status == analyzer.StatusTrue && msg == "":
			msg = "gpuheal-agent: no problem"
		case unhealthy(s) && s.Action != "":
			// People read the condition, not our metrics: say what to do
			// (controllers read it from the recommended-actions annotation).
			msg += "; recommended action: " + string(s.Action)
		}
		list = append(list, kubecore.NodeCondition{
			Type:               s.Type,
			Status:             s.Status,
			Reason:             reasonOrDefault(s),
			Message:            termsafe.Clean(msg), // kubectl describe node shows it
			LastHeartbeatTime:  metav1.NewTime(now),
			LastTransitionTime: metav1.NewTime(since),
		})
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": list}})
	if err != nil {
		return fmt.Errorf("encoding conditions of node %s: %w", node, err)
	}
	err = c.Patch(types.StrategicMergePatchType).Resource("nodes").Name(node).SubResource("status").
		Body(body).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("patching conditions of node %s: %w", node, err)
	}
	return nil
}

func reasonOrDefault(s analyzer.ConditionStatus) string {
	if s.Reason != "" {
		return s.Reason
	}
	if s.Status == analyzer.StatusTrue {
		return v1alpha1.ReasonNoProblemDetected
	}
	return v1alpha1.ReasonProblemDetected
}

// patchMetadata writes the gpu-healthy-count label and the active-warnings,
// recommended-actions, gpu-faults and agent-checks annotations in one
// merge patch, when any of them differs from what the node shows (the
// checks report also when it is due again, checksDue). faults is the
// gpu-faults JSON, "" for none.
func (p *Conditions) patchMetadata(ctx context.Context, healthy, warnings int, advice map[string]string, faults string) error {
	advised := ""
	if len(advice) > 0 {
		b, err := json.Marshal(advice)
		if err != nil {
			return fmt.Errorf("encoding the recommended actions of node %s: %w", p.node, err)
		}
		advised = string(b)
	}
	now := p.clock.Now()
	p.mu.Lock()
	checks := p.checksDue(now)
	same := healthy == p.labelled && warnings == p.warned && p.advisedKnown && advised == p.advised && checks == nil &&
		p.faults.known && faults == p.faults.shown
	p.mu.Unlock()
	if same {
		return nil
	}
	// The controller's health score counts the warnings, its remediation
	// takes the advice and its health gate the checks; schedulers read the
	// healthy GPU count.
	var adviceValue any // nil removes the annotation
	if advised != "" {
		adviceValue = advised
	}
	var faultsValue any // nil removes the annotation
	if faults != "" {
		faultsValue = faults
	}
	annotations := map[string]any{
		v1alpha1.AnnotationActiveWarnings:     strconv.Itoa(warnings),
		v1alpha1.AnnotationRecommendedActions: adviceValue,
		v1alpha1.AnnotationGPUFaults:          faultsValue,
	}
	if checks != nil {
		b, err := json.Marshal(checks)
		if err != nil {
			return fmt.Errorf("encoding the checks report of node %s: %w", p.node, err)
		}
		annotations[v1alpha1.AnnotationAgentChecks] = string(b)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]string{v1alpha1.LabelGPUHealthyCount: strconv.Itoa(healthy)},
		"annotations": annotations,
	}})
	if err != nil {
		return fmt.Errorf("encoding the metadata of node %s: %w", p.node, err)
	}
	err = p.client.Patch(types.MergePatchType).Resource("nodes").Name(p.node).Body(patch).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("labelling node %s: %w", p.node, err)
	}
	p.mu.Lock()
	p.labelled, p.warned, p.advised, p.advisedKnown = healthy, warnings, advised, true
	p.faults.shown, p.faults.known = faults, true
	if checks != nil {
		// The report's own time, not the write's: a report judged before
		// the clock moved and written after it is as old as its judgement,
		// and the next one, judged now, is due at once.
		p.shownChecks, p.shownAt = checks, checks.Time.Time
		if p.shownAt.IsZero() {
			p.shownAt = now
		}
	}
	p.mu.Unlock()
	return nil
}
