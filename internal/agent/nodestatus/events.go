package nodestatus

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
	"k8s.io/utils/clock"

	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// EventNamespace is where node events live (the kubelet's choice too), so
// `kubectl describe node` shows them.
const EventNamespace = "default"

// Events writes warning Events on the agent's own Node. An Event's name
// is derived from the node and a key, so a recurrence finds its Event and
// counts it up instead of adding another, as the kubelet aggregates. Not
// safe for concurrent use: each sender has its own.
type Events struct {
	client rest.Interface
	node   string
	clock  clock.PassiveClock

	nodeUID types.UID
}

// NewEvents returns the Event writer of node.
func NewEvents(c rest.Interface, node string, clk clock.PassiveClock) *Events {
	return &Events{client: c, node: node, clock: clk}
}

// Emit creates the Event for key, or counts up the existing one and
// updates its message.
func (e *Events) Emit(ctx context.Context, key, reason, message string) error {
	if e.nodeUID == "" {
		n, err := kubecore.GetNode(ctx, e.client, e.node)
		if err != nil {
			return err
		}
		e.nodeUID = n.UID
	}
	// Event messages are shown by kubectl on terminals.
	message = termsafe.Clean(message)
	sum := sha256.Sum256([]byte(key))
	name := e.node + ".gpuheal." + hex.EncodeToString(sum[:6])
	ts := metav1.NewTime(e.clock.Now())
	body, err := json.Marshal(kubecore.Event{
		APIVersion:     "v1",
		Kind:           "Event",
		Metadata:       metav1.ObjectMeta{Name: name, Namespace: EventNamespace},
		InvolvedObject: kubecore.ObjectReference{Kind: "Node", Name: e.node, UID: string(e.nodeUID), APIVersion: "v1"},
		Reason:         reason,
		Message:        message,
		Type:           "Warning",
		Source:         kubecore.EventSource{Component: "gpuheal-agent", Host: e.node},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
	})
	if err != nil {
		return fmt.Errorf("encoding event %s: %w", name, err)
	}
	err = e.client.Post().Namespace(EventNamespace).Resource("events").Body(body).Do(ctx).Error()
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var old kubecore.Event
	if err := kubecore.Get(ctx, e.client.Get().Namespace(EventNamespace).Resource("events").Name(name), &old); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"count":%s,"lastTimestamp":%q,"message":%q}`,
		strconv.Itoa(int(old.Count)+1), ts.UTC().Format(time.RFC3339), message)
	return e.client.Patch(types.MergePatchType).Namespace(EventNamespace).Resource("events").Name(name).
		Body([]byte(patch)).Do(ctx).Error()
}
