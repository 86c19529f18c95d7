package predictor

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// predictedCondition is v1alpha1.ConditionGPUFailurePredicted, True while
// a GPU of the node is predicted to fail (its risk crossed the threshold
// and has not fallen back below the re-arm level). It recommends no action
// (finding.ActionNone): only a RemediationPolicy that lists it, with an
// action rule, acts on it (docs/remediation.md). It tracks the condition's status and transition time.
type predictedCondition struct {
	status string
	since  time.Time
}

// next returns the condition for the GPUs alarmed now; the transition
// time moves only when the status flips.
func (c *predictedCondition) next(at time.Time, alarmed []*gpuPredictor, threshold float64, horizon time.Duration) analyzer.ConditionStatus {
	status, reason, action := analyzer.StatusFalse, v1alpha1.ReasonNoFailurePredicted, finding.Action("")
	msg := fmt.Sprintf("gpuheal-agent: no GPU's failure risk is at or above %.2f", threshold)
	if len(alarmed) > 0 {
		status, reason, action = analyzer.StatusTrue, v1alpha1.ReasonGPUFailurePredicted, finding.ActionNone
		sort.Slice(alarmed, func(i, j int) bool { return alarmed[i].index < alarmed[j].index })
		parts := make([]string, len(alarmed))
		for i, g := range alarmed {
			// The risk at the crossing, not the current one: a message that
			// changed every interval would patch the Node every interval.
			parts[i] = fmt.Sprintf("GPU %d (%s, %s) risk %.2f", g.index, g.uuid, g.bus, g.alarmRisk)
		}
		// The publisher adds "; recommended action: none" for people.
		msg = fmt.Sprintf("%s: failure predicted within %d minutes (threshold %.2f)",
			strings.Join(parts, ", "), int(horizon.Minutes()), threshold)
	}
	if status != c.status {
		c.status, c.since = status, at
	}
	return analyzer.ConditionStatus{Type: v1alpha1.ConditionGPUFailurePredicted, Status: status, Reason: reason, Message: msg,
		Action: action, LastTransitionTime: c.since}
}

// OffCondition is published when the predictor is off, so that a True
// left by an earlier run does not keep a policy draining the node.
func OffCondition(at time.Time) analyzer.ConditionStatus {
	return analyzer.ConditionStatus{Type: v1alpha1.ConditionGPUFailurePredicted, Status: analyzer.StatusFalse,
		Reason: v1alpha1.ReasonPredictorOff, Message: "gpuheal-agent: the failure predictor is off (--predictor=off)", LastTransitionTime: at}
}
