package nodestatus

import (
	"maps"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/analyzer"
)

// recommendedActions maps each unhealthy condition that recommends an
// action to that action: the value of v1alpha1.AnnotationRecommendedActions.
func recommendedActions(conds []analyzer.ConditionStatus) map[string]string {
	out := map[string]string{}
	for _, c := range conds {
		if unhealthy(c) && c.Action != "" {
			out[c.Type] = string(c.Action)
		}
	}
	return out
}

// mergeAdvice is next with the entries of shown that next lacks: the
// advice of conditions about to turn healthy stays until they have.
func mergeAdvice(shown, next map[string]string) map[string]string {
	out := maps.Clone(next)
	for t, a := range shown {
		if _, ok := out[t]; !ok {
			out[t] = a
		}
	}
	return out
}

// unhealthy says whether a condition reports a problem: False for the
// rules' conditions (True means ready), True for GPUFailurePredicted.
func unhealthy(c analyzer.ConditionStatus) bool {
	if c.Type == v1alpha1.ConditionGPUFailurePredicted {
		return c.Status == analyzer.StatusTrue
	}
	return c.Status != analyzer.StatusTrue
}
