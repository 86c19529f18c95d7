package agent

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpuheal/gpuheal/internal/analyzer"
)

// PredictedFailureCondition is True while a GPU of the node is predicted
// to fail (its risk crossed the threshold and has not fallen back below
// the re-arm level). It recommends no action: only a RemediationPolicy
// that lists it, with an action rule, acts on it (docs/remediation.md).
const PredictedFailureCondition = "GPUFailurePredicted"

// predictedCondition tracks the condition's status and transition time.
type predictedCondition struct {
	status string
	since  time.Time
}

// next returns the condition for the GPUs alarmed now; the transition
// time moves only when the status flips.
func (c *predictedCondition) next(at time.Time, alarmed []*gpuPredictor, threshold float64, horizon time.Duration) analyzer.ConditionStatus {
	status, reason := analyzer.StatusFalse, "NoFailurePredicted"
	msg := fmt.Sprintf("gpuheal-agent: no GPU's failure risk is at or above %.2f", threshold)
	if len(alarmed) > 0 {
		status, reason = analyzer.StatusTrue, PredictedFailureCondition
		sort.Slice(alarmed, func(i, j int) bool { return alarmed[i].index < alarmed[j].index })
		parts := make([]string, len(alarmed))
		for i, g := range alarmed {
			// The risk at the crossing, not the current one: a message that
			// changed every interval would patch the Node every interval.
			parts[i] = fmt.Sprintf("GPU %d (%s, %s) risk %.2f", g.index, g.uuid, g.bus, g.alarmRisk)
		}
		msg = fmt.Sprintf("%s: failure predicted within %d minutes (threshold %.2f); recommended action: none",
			strings.Join(parts, ", "), int(horizon.Minutes()), threshold)
	}
	if status != c.status {
		c.status, c.since = status, at
	}
	return analyzer.ConditionStatus{Type: PredictedFailureCondition, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: c.since}
}

// offCondition is published when the predictor is off, so that a True
// left by an earlier run does not keep a policy draining the node.
func offCondition(at time.Time) analyzer.ConditionStatus {
	return analyzer.ConditionStatus{Type: PredictedFailureCondition, Status: analyzer.StatusFalse,
		Reason: "PredictorOff", Message: "gpuheal-agent: the failure predictor is off (--predictor=off)", LastTransitionTime: at}
}
