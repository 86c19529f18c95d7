package remediation

import (
	"encoding/json"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// cordonPatch is a JSON patch from orig to changed covering what cordon
// and uncordon touch: spec.unschedulable, spec.taints and annotations.
//
// It guards the fields it depends on instead of the whole object: "test"
// operations make the API server refuse the patch (422) when the taints or
// the unschedulable flag differ from what was read, so a taint someone
// added meanwhile is never dropped (the list has no merge key). Heartbeats
// change only the status, so unlike a resourceVersion precondition they
// do not make the cordon fail and cost two more round trips (a read and
// a second patch) on a fleet whose nodes heartbeat all the time.
func cordonPatch(orig, changed *corev1.Node) ([]byte, error) {
	ops := []jsonPatchOp{
		// An absent field tests equal to null (an empty list or false is
		// not stored at all).
		{Op: "test", Path: "/spec/taints", Value: orNil(orig.Spec.Taints)},
		{Op: "test", Path: "/spec/unschedulable", Value: orFalseNil(orig.Spec.Unschedulable)},
	}
	if !equality.Semantic.DeepEqual(orig.Spec.Taints, changed.Spec.Taints) {
		if len(changed.Spec.Taints) == 0 {
			ops = append(ops, jsonPatchOp{Op: "remove", Path: "/spec/taints"})
		} else {
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/taints", Value: changed.Spec.Taints})
		}
	}
	if orig.Spec.Unschedulable != changed.Spec.Unschedulable {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/unschedulable", Value: changed.Spec.Unschedulable})
	}
	switch {
	case maps.Equal(orig.Annotations, changed.Annotations):
	case len(orig.Annotations) == 0:
		ops = append(ops, jsonPatchOp{Op: "test", Path: "/metadata/annotations", Value: nil},
			jsonPatchOp{Op: "add", Path: "/metadata/annotations", Value: changed.Annotations})
	default:
		for k, v := range changed.Annotations {
			if old, ok := orig.Annotations[k]; !ok || old != v {
				ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + pointerEscape(k), Value: v})
			}
		}
		for k := range orig.Annotations {
			if _, ok := changed.Annotations[k]; !ok {
				ops = append(ops, jsonPatchOp{Op: "remove", Path: "/metadata/annotations/" + pointerEscape(k)})
			}
		}
	}
	return json.Marshal(ops)
}

func orNil(t []corev1.Taint) any {
	if len(t) == 0 {
		return nil
	}
	return t
}

func orFalseNil(b bool) any {
	if !b {
		return nil
	}
	return true
}

// pointerEscape escapes a map key for a JSON pointer (RFC 6901).
func pointerEscape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
