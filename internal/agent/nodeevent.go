package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

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
		var n kubeNode
		if err := getInto(ctx, e.client.Get().Resource("nodes").Name(e.node), &n); err != nil {
			return fmt.Errorf("getting node %s: %w", e.node, err)
		}
		e.nodeUID = n.UID
	}
	sum := sha256.Sum256([]byte(key))
	name := e.node + ".gpuheal." + hex.EncodeToString(sum[:6])
	ts := metav1.NewTime(e.now())
	body, err := json.Marshal(kubeEvent{
		APIVersion:     "v1",
		Kind:           "Event",
		Metadata:       metav1.ObjectMeta{Name: name, Namespace: eventNamespace},
		InvolvedObject: objectReference{Kind: "Node", Name: e.node, UID: string(e.nodeUID), APIVersion: "v1"},
		Reason:         reason,
		Message:        message,
		Type:           "Warning",
		Source:         eventSource{Component: "gpuheal-agent", Host: e.node},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
	})
	if err != nil {
		return err
	}
	err = e.client.Post().Namespace(eventNamespace).Resource("events").Body(body).Do(ctx).Error()
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var old kubeEvent
	if err := getInto(ctx, e.client.Get().Namespace(eventNamespace).Resource("events").Name(name), &old); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"count":%s,"lastTimestamp":%q,"message":%q}`,
		strconv.Itoa(int(old.Count)+1), ts.UTC().Format(time.RFC3339), message)
	return e.client.Patch(types.MergePatchType).Namespace(eventNamespace).Resource("events").Name(name).
		Body([]byte(patch)).Do(ctx).Error()
}
