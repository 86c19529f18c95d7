package agent

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// The agent reads and writes a handful of fields of core/v1 Nodes and
// Events, so it declares those fields here instead of linking
// k8s.io/api/core/v1: registering that package's ~100 types costs every
// node's agent about 1 MiB of resident memory (docs/benchmarks.md), and
// the fields below are a stable part of the API. metav1 comes with
// client-go's REST client anyway.

type kubeNode struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            kubeNodeStatus `json:"status"`
}

type kubeNodeStatus struct {
	Conditions []nodeCondition `json:"conditions,omitempty"`
}

type kubeNodeList struct {
	Items []kubeNode `json:"items"`
}

// nodeCondition is core/v1 NodeCondition.
type nodeCondition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	LastHeartbeatTime  metav1.Time `json:"lastHeartbeatTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
}

// kubeEvent is the part of a core/v1 Event the agent writes.
type kubeEvent struct {
	APIVersion     string            `json:"apiVersion"`
	Kind           string            `json:"kind"`
	Metadata       metav1.ObjectMeta `json:"metadata"`
	InvolvedObject objectReference   `json:"involvedObject"`
	Reason         string            `json:"reason,omitempty"`
	Message        string            `json:"message,omitempty"`
	Source         eventSource       `json:"source,omitempty"`
	FirstTimestamp metav1.Time       `json:"firstTimestamp,omitempty"`
	LastTimestamp  metav1.Time       `json:"lastTimestamp,omitempty"`
	Count          int32             `json:"count,omitempty"`
	Type           string            `json:"type,omitempty"`
}

type objectReference struct {
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

type eventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}

// getInto reads one object (or list) of the core API as JSON into v.
func getInto(ctx context.Context, req *rest.Request, v any) error {
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding %T from the API server: %w", v, err)
	}
	return nil
}

// coreGroupVersion is the core API, v1.
var coreGroupVersion = schema.GroupVersion{Version: "v1"}

// statusScheme knows only metav1.Status, so that the REST client turns an
// error response into a typed error (IsAlreadyExists, IsForbidden).
var statusScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, coreGroupVersion)
	return s
}()
