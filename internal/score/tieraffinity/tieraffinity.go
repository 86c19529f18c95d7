// Package tieraffinity is how pods use the health tier that the controller
// publishes on GPU nodes (the label gpuheal.io/health-tier): the node
// affinities of docs/health-score.md, and the PreferNoSchedule taint the
// controller keeps on the lowest tier. The demo's and the soak's training
// jobs take their affinity from here, and a test holds the documentation's
// YAML to these values, so the three cannot drift apart.
//
// It is a sub-package of internal/score so that the score itself stays
// free of Kubernetes types.
package tieraffinity

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/score"
)

// TaintKey is the key of the taint on bronze nodes: the tier label's own
// key, so that one name says "gpuheal's health tier" in both places.
const TaintKey = v1alpha1.LabelHealthTier

// Weights of PreferHealthier: a gold node scores twice a silver one in the
// scheduler's node-affinity score; bronze and unscored nodes score nothing.
const (
	GoldWeight   int32 = 100
	SilverWeight int32 = 50
)

// BronzeTaint is the taint the controller keeps on bronze nodes. It is
// PreferNoSchedule: the scheduler places new pods elsewhere when it can,
// but a bronze node still takes work when nothing better has room, and
// no pod is ever evicted for it.
func BronzeTaint() corev1.Taint {
	return corev1.Taint{Key: TaintKey, Value: string(score.Bronze), Effect: corev1.TaintEffectPreferNoSchedule}
}

// IsBronzeTaint reports whether t is the controller's tier taint, whatever
// its value or effect (a hand-edited one is the controller's to correct).
func IsBronzeTaint(t corev1.Taint) bool { return t.Key == TaintKey }

// PreferHealthier is the "prefer healthier nodes" affinity: gold first,
// then silver, then the rest. It never keeps a pod Pending.
func PreferHealthier() *corev1.Affinity {
	term := func(w int32, t score.Tier) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: w, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1alpha1.LabelHealthTier, Operator: corev1.NodeSelectorOpIn, Values: []string{string(t)}}},
		}}
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{term(GoldWeight, score.Gold), term(SilverWeight, score.Silver)},
	}}
}

// GoldOrSilverOnly is the "critical jobs only on gold/silver" affinity: a
// pod with it stays Pending rather than run on a bronze node, or on one
// with no tier yet.
func GoldOrSilverOnly() *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1alpha1.LabelHealthTier, Operator: corev1.NodeSelectorOpIn,
				Values: []string{string(score.Gold), string(score.Silver)}}},
		}}},
	}}
}
