// Package kubecorefake is an in-process API server for the part of
// core/v1 the agent's Node writers use: get one Node, merge-patch its
// labels, annotations and taints (with the resourceVersion precondition), patch its status conditions (merged by type, as
// the strategic merge patch does), and create, get and merge-patch Events.
// It records every request in order and can fail the next ones. Unit tests
// use it; what needs the real API server's rules (RBAC, admission,
// validation) is tested against one, under the integration build tag.
package kubecorefake

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
)

// EventNamespace is where the fake keeps Events (the agent's choice).
const EventNamespace = "default"

// Request is one request the fake answered or failed.
type Request struct {
	Method, Path, Body string
}

// API is the fake; Client talks to it.
type API struct {
	Client rest.Interface
	srv    *httptest.Server

	mu       sync.Mutex
	node     kubecore.Node
	events   map[string]*kubecore.Event
	requests []Request
	failNext int
}

// Start serves a fake API server with one Node named node (UID uid-1234).
func Start(node string) (*API, error) {
	a := &API{events: map[string]*kubecore.Event{}}
	a.node.Name, a.node.UID = node, "uid-1234"
	a.node.Labels, a.node.Annotations = map[string]string{}, map[string]string{}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	c, err := kubecore.ClientFor(&rest.Config{Host: a.srv.URL, QPS: -1})
	if err != nil {
		a.srv.Close()
		return nil, err
	}
	a.Client = c
	return a, nil
}

// Close stops the server.
func (a *API) Close() { a.srv.Close() }

// FailNext makes the next n requests fail with 503.
func (a *API) FailNext(n int) {
	a.mu.Lock()
	a.failNext = n
	a.mu.Unlock()
}

// SetAnnotation puts an annotation on the Node, as an earlier run left it.
func (a *API) SetAnnotation(key, value string) {
	a.mu.Lock()
	a.node.Annotations[key] = value
	a.mu.Unlock()
}

// SetCondition puts a condition on the Node, as an earlier run left it.
func (a *API) SetCondition(c kubecore.NodeCondition) {
	a.mu.Lock()
	a.node.Status.Conditions = mergeConditions(a.node.Status.Conditions, []kubecore.NodeCondition{c})
	a.mu.Unlock()
}

// Node returns a copy of the Node as it is now.
func (a *API) Node() kubecore.Node {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.node
	n.ObjectMeta = *a.node.ObjectMeta.DeepCopy()
	n.Status.Conditions = slices.Clone(a.node.Status.Conditions)
	n.Spec.Taints = slices.Clone(a.node.Spec.Taints)
	return n
}

// Condition returns the Node's condition of that type.
func (a *API) Condition(typ string) (kubecore.NodeCondition, bool) {
	n := a.Node()
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return kubecore.NodeCondition{}, false
}

// Annotation returns one of the Node's annotations.
func (a *API) Annotation(key string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.node.Annotations[key]
	return v, ok
}

// EventsWithReason returns copies of the Events with that reason.
func (a *API) EventsWithReason(reason string) []kubecore.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []kubecore.Event
	for _, ev := range a.events {
		if ev.Reason == reason {
			out = append(out, *ev)
		}
	}
	return out
}

// Requests returns the requests answered so far, in order.
func (a *API) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

// NodePatches returns the bodies of the merge patches of the Node's
// metadata, in order.
func (a *API) NodePatches() []string {
	var out []string
	for _, r := range a.Requests() {
		if r.Method == http.MethodPatch && r.Path == "/api/v1/nodes/"+a.node.Name {
			out = append(out, r.Body)
		}
	}
	return out
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failNext > 0 {
		a.failNext--
		http.Error(w, "injected failure", http.StatusServiceUnavailable)
		return
	}
	a.requests = append(a.requests, Request{Method: r.Method, Path: r.URL.Path, Body: string(body)})
	nodePath := "/api/v1/nodes/" + a.node.Name
	events := "/api/v1/namespaces/" + EventNamespace + "/events"
	switch p := r.URL.Path; {
	case p == nodePath && r.Method == http.MethodGet:
		write(w, a.node)
	case p == nodePath && r.Method == http.MethodPatch:
		a.patchMetadata(w, body)
	case p == nodePath+"/status" && r.Method == http.MethodPatch:
		var patch struct {
			Status kubecore.NodeStatus `json:"status"`
		}
		if err := json.Unmarshal(body, &patch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a.node.Status.Conditions = mergeConditions(a.node.Status.Conditions, patch.Status.Conditions)
		write(w, a.node)
	case p == events && r.Method == http.MethodPost:
		var ev kubecore.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if a.events[ev.Metadata.Name] != nil {
			status(w, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, ev.Metadata.Name))
			return
		}
		a.events[ev.Metadata.Name] = &ev
		write(w, &ev)
	case strings.HasPrefix(p, events+"/"):
		a.serveEvent(w, r, strings.TrimPrefix(p, events+"/"), body)
	default:
		http.Error(w, "not faked: "+r.Method+" "+p, http.StatusNotFound)
	}
}

func (a *API) patchMetadata(w http.ResponseWriter, body []byte) {
	var patch struct {
		Metadata struct {
			ResourceVersion string             `json:"resourceVersion"`
			Labels          map[string]*string `json:"labels"`
			Annotations     map[string]*string `json:"annotations"`
		} `json:"metadata"`
		Spec *struct {
			Taints []kubecore.Taint `json:"taints"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(body, &patch); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rv := patch.Metadata.ResourceVersion; rv != "" && rv != a.node.ResourceVersion {
		status(w, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, a.node.Name, errors.New("the object has been modified")))
		return
	}
	merge(a.node.Labels, patch.Metadata.Labels)
	merge(a.node.Annotations, patch.Metadata.Annotations)
	if patch.Spec != nil {
		a.node.Spec.Taints = patch.Spec.Taints
	}
	write(w, a.node)
}

// SetResourceVersion sets the Node's resourceVersion, which a patch that
// carries one must match (409 Conflict otherwise); the fake never changes
// it itself.
func (a *API) SetResourceVersion(rv string) {
	a.mu.Lock()
	a.node.ResourceVersion = rv
	a.mu.Unlock()
}

func (a *API) serveEvent(w http.ResponseWriter, r *http.Request, name string, body []byte) {
	ev := a.events[name]
	switch {
	case ev == nil:
		status(w, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, name))
	case r.Method == http.MethodGet:
		write(w, ev)
	case r.Method == http.MethodPatch:
		if err := json.Unmarshal(body, ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		write(w, ev)
	default:
		http.Error(w, "not faked: "+r.Method+" event", http.StatusMethodNotAllowed)
	}
}

// merge applies a JSON merge patch of a string map: null removes.
func merge(into map[string]string, patch map[string]*string) {
	for k, v := range patch {
		if v == nil {
			delete(into, k)
		} else {
			into[k] = *v
		}
	}
}

// mergeConditions replaces conditions of the same type and appends new
// ones, as the strategic merge patch of nodes/status does.
func mergeConditions(have, patch []kubecore.NodeCondition) []kubecore.NodeCondition {
	for _, c := range patch {
		i := slices.IndexFunc(have, func(h kubecore.NodeCondition) bool { return h.Type == c.Type })
		if i < 0 {
			have = append(have, c)
		} else {
			have[i] = c
		}
	}
	return have
}

func write(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func status(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(&st)
}
