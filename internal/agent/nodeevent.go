package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// nodeEvents writes warning Events on the agent's own Node. An Event's
// name is derived from the node and a key, so a recurrence finds its Event
// and counts it up instead of adding another, as the kubelet aggregates.
// Not safe for concurrent use: each sender has its own.
type nodeEvents struct {
	client rest.Interface
	node   string
	now    func() time.Time

	nodeUID types.UID
}

func newNodeEvents(c rest.Interface, node string) *nodeEvents {
	return &nodeEvents{client: c, node: node, now: time.Now}
}

// emit creates the Event for key, or counts up the existing one and
// updates its message.
func (e *nodeEvents) emit(ctx context.Context, key, reason, message string) error {
	if e.nodeUID == "" {
		var n corev1.Node
		if err := e.client.Get().Resource("nodes").Name(e.node).Do(ctx).Into(&n); err != nil {
			return fmt.Errorf("getting node %s: %w", e.node, err)
		}
		e.nodeUID = n.UID
	}
	sum := sha256.Sum256([]byte(key))
	name := e.node + ".gpuheal." + hex.EncodeToString(sum[:6])
	ts := metav1.NewTime(e.now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: eventNamespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: e.node, UID: e.nodeUID, APIVersion: "v1"},
		Reason:         reason,
		Message:        message,
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "gpuheal-agent", Host: e.node},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
	}
	err := e.client.Post().Namespace(eventNamespace).Resource("events").Body(ev).Do(ctx).Error()
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var old corev1.Event
	if err := e.client.Get().Namespace(eventNamespace).Resource("events").Name(name).Do(ctx).Into(&old); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"count":%s,"lastTimestamp":%q,"message":%q}`,
		strconv.Itoa(int(old.Count)+1), ts.UTC().Format(time.RFC3339), message)
	return e.client.Patch(types.MergePatchType).Namespace(eventNamespace).Resource("events").Name(name).
		Body([]byte(patch)).Do(ctx).Error()
}
