package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// fakeAPI is the part of the API server the agent's Node writers use:
// get and merge-patch one Node's annotations, create, get and merge-patch
// Events. It records the Node patches and can fail the next requests.
type fakeAPI struct {
	t    *testing.T
	node string

	mu          sync.Mutex
	annotations map[string]string
	nodePatches []string
	events      map[string]*corev1.Event
	failNext    int
}

func newFakeAPI(t *testing.T, node string) (*fakeAPI, rest.Interface) {
	t.Helper()
	f := &fakeAPI{t: t, node: node, annotations: map[string]string{}, events: map[string]*corev1.Event{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, APIPath: "/api", QPS: -1}
	cfg.GroupVersion = &coreGroupVersion
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(statusScheme).WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failNext > 0 {
		f.failNext--
		http.Error(w, "injected failure", http.StatusServiceUnavailable)
		return
	}
	const events = "/api/v1/namespaces/default/events"
	switch p := r.URL.Path; {
	case p == "/api/v1/nodes/"+f.node && r.Method == http.MethodGet:
		f.write(w, f.nodeObject())
	case p == "/api/v1/nodes/"+f.node && r.Method == http.MethodPatch:
		var patch struct {
			Metadata struct {
				Annotations map[string]*string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &patch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for k, v := range patch.Metadata.Annotations {
			if v == nil {
				delete(f.annotations, k)
			} else {
				f.annotations[k] = *v
			}
		}
		f.nodePatches = append(f.nodePatches, string(body))
		f.write(w, f.nodeObject())
	case p == events && r.Method == http.MethodPost:
		var ev corev1.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if f.events[ev.Name] != nil {
			f.status(w, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, ev.Name))
			return
		}
		f.events[ev.Name] = &ev
		f.write(w, &ev)
	case strings.HasPrefix(p, events+"/"):
		ev := f.events[strings.TrimPrefix(p, events+"/")]
		switch {
		case ev == nil:
			f.status(w, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, p))
		case r.Method == http.MethodGet:
			f.write(w, ev)
		case r.Method == http.MethodPatch:
			if err := json.Unmarshal(body, ev); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			f.write(w, ev)
		}
	default:
		http.Error(w, "not faked: "+r.Method+" "+p, http.StatusNotFound)
	}
}

func (f *fakeAPI) nodeObject() *corev1.Node {
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: f.node, UID: "uid-1234", Annotations: map[string]string{}}}
	for k, v := range f.annotations {
		n.Annotations[k] = v
	}
	return n
}

func (f *fakeAPI) write(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		f.t.Errorf("fake API: encoding a reply: %v", err)
	}
}

func (f *fakeAPI) status(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(&st)
}

// eventsWithReason returns copies of the Events with that reason.
func (f *fakeAPI) eventsWithReason(reason string) []corev1.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []corev1.Event
	for _, ev := range f.events {
		if ev.Reason == reason {
			out = append(out, *ev.DeepCopy())
		}
	}
	return out
}

func (f *fakeAPI) annotation(key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.annotations[key]
	return v, ok
}

func (f *fakeAPI) patches() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.nodePatches...)
}
