// Package kubecore is the agent's light view of core/v1: the handful of
// Node and Event fields the agent reads and writes, and a REST client for
// them. It does not link k8s.io/api/core/v1: registering that package's
// ~100 types costs every node's agent about 1 MiB of resident memory
// (docs/benchmarks.md), and the fields below are a stable part of the
// API. metav1 comes with client-go's REST client anyway.
package kubecore

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Node is the part of a core/v1 Node the agent reads.
type Node struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              NodeSpec   `json:"spec,omitzero"`
	Status            NodeStatus `json:"status"`
}

// NodeSpec holds the Node's taints, the one spec field the agent writes
// (the health gate's join taint, added once).
type NodeSpec struct {
	Taints []Taint `json:"taints,omitempty"`
}

// Taint is core/v1 Taint.
type Taint struct {
	Key       string       `json:"key"`
	Value     string       `json:"value,omitempty"`
	Effect    string       `json:"effect"`
	TimeAdded *metav1.Time `json:"timeAdded,omitempty"`
}

// NodeStatus holds the Node's conditions and capacity.
type NodeStatus struct {
	Conditions []NodeCondition `json:"conditions,omitempty"`
	// Capacity is read (extended resources such as nvidia.com/gpu),
	// never written by the agent.
	Capacity map[string]resource.Quantity `json:"capacity,omitempty"`
}

// NodeList is a list of Nodes.
type NodeList struct {
	Items []Node `json:"items"`
}

// NodeCondition is core/v1 NodeCondition.
type NodeCondition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	LastHeartbeatTime  metav1.Time `json:"lastHeartbeatTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
}

// Event is the part of a core/v1 Event the agent writes.
type Event struct {
	APIVersion     string            `json:"apiVersion"`
	Kind           string            `json:"kind"`
	Metadata       metav1.ObjectMeta `json:"metadata"`
	InvolvedObject ObjectReference   `json:"involvedObject"`
	Reason         string            `json:"reason,omitempty"`
	Message        string            `json:"message,omitempty"`
	Source         EventSource       `json:"source,omitempty"`
	FirstTimestamp metav1.Time       `json:"firstTimestamp,omitempty"`
	LastTimestamp  metav1.Time       `json:"lastTimestamp,omitempty"`
	Count          int32             `json:"count,omitempty"`
	Type           string            `json:"type,omitempty"`
}

// ObjectReference is core/v1 ObjectReference, the fields Events use.
type ObjectReference struct {
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// EventSource is core/v1 EventSource.
type EventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}

// Get reads one object (or list) of the core API as JSON into v.
func Get(ctx context.Context, req *rest.Request, v any) error {
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding %T from the API server: %w", v, err)
	}
	return nil
}

// GetNode reads the named Node.
func GetNode(ctx context.Context, c rest.Interface, name string) (*Node, error) {
	var n Node
	if err := Get(ctx, c.Get().Resource("nodes").Name(name), &n); err != nil {
		return nil, fmt.Errorf("getting node %s: %w", name, err)
	}
	return &n, nil
}
