package remediation

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// recommendedAction is the agent's advice for a condition of the node: the
// entry for condType in the JSON object the agent writes to
// AnnotationRecommendedActions (finding.Action values). A node without the
// annotation (node-problem-detector, another agent) or without an entry for
// the type gives none, and the policy's rules and the built-in mapping
// decide. An annotation that is not such an object, or an unknown action,
// also gives none, with an error saying what was wrong: the advice is
// outside input, and a bad one must not stop the repair.
func recommendedAction(n *corev1.Node, condType string) (string, error) {
	raw, ok := n.Annotations[v1alpha1.AnnotationRecommendedActions]
	if !ok {
		return "", nil
	}
	var advice map[string]string
	if err := json.Unmarshal([]byte(raw), &advice); err != nil {
		return "", fmt.Errorf("reading annotation %s of node %s: %w", v1alpha1.AnnotationRecommendedActions, n.Name, err)
	}
	a, ok := advice[condType]
	if !ok {
		return "", nil
	}
	if _, err := finding.ParseAction(a); err != nil {
		return "", fmt.Errorf("reading annotation %s of node %s, entry %s: %w", v1alpha1.AnnotationRecommendedActions, n.Name, condType, err)
	}
	return a, nil
}
