// Package nodemark is the one home of how gpuheal marks a Node it takes
// out of service (cordon, taint, the annotations that say the cordon is
// gpuheal's) and how those marks are undone without touching anyone
// else's: the controller, its release at uninstall and the CLI's
// `gpuheal uncordon --ours` all undo through Release.
package nodemark

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// HasTaint reports whether n carries gpuheal's NoSchedule taint of a node
// in remediation (TaintUnhealthy).
func HasTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintUnhealthy })
}

// HasValidatingTaint reports whether n carries the health gate's taint
// (TaintValidating): a node not yet, or no longer, validated.
func HasValidatingTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintValidating })
}

// Ours reports whether n carries any mark of gpuheal's: a cordon gpuheal
// recorded as its own, or one of its two taints.
func Ours(n *corev1.Node) bool {
	return n.Annotations[v1alpha1.AnnotationCordonedBy] != "" || HasTaint(n) || HasValidatingTaint(n)
}

// UndoCordon removes gpuheal's taint and annotations, and the cordon
// unless someone else had cordoned the node before gpuheal did.
func UndoCordon(n *corev1.Node) {
	if n.Annotations[v1alpha1.AnnotationWasUnschedulable] != "true" {
		n.Spec.Unschedulable = false
	}
	delete(n.Annotations, v1alpha1.AnnotationCordonedBy)
	delete(n.Annotations, v1alpha1.AnnotationWasUnschedulable)
	removeTaint(n)
}

// Release undoes whatever of gpuheal's marks n carries and reports
// whether it changed anything. A cordon without gpuheal's record is not
// gpuheal's and stays, even where gpuheal's taint is removed beside it.
// The health gate's taint goes too: whoever releases a node (the uninstall
// hook, an operator's `gpuheal uncordon --ours`) hands it back to service,
// and with gpuheal gone nothing else would ever lift it. The node keeps no
// validated-at: it was not validated.
func Release(n *corev1.Node) bool {
	gate := RemoveValidatingTaint(n)
	switch {
	case n.Annotations[v1alpha1.AnnotationCordonedBy] != "":
		UndoCordon(n)
	case HasTaint(n):
		removeTaint(n)
	default:
		return gate
	}
	return true
}

// RemoveValidatingTaint removes the health gate's taint and reports
// whether it was there.
func RemoveValidatingTaint(n *corev1.Node) bool {
	before := len(n.Spec.Taints)
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintValidating })
	return len(n.Spec.Taints) != before
}

func removeTaint(n *corev1.Node) {
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1alpha1.TaintUnhealthy })
}
