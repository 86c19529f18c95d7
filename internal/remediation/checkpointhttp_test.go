package remediation

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// TestCheckpointURLIsRestricted: a pod's owner may point the controller
// only at the pod itself or a Service of its own namespace, over plain
// http without credentials (server-side request forgery otherwise).
func TestCheckpointURLIsRestricted(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://10.1.2.3:8080/checkpoint", true},
		{"http://[fd00::7]:8080/checkpoint", true},
		{"http://trainer.train.svc:8080/ckpt", true},
		{"http://trainer.train.svc.cluster.local/ckpt", true},
		{"http://10.1.2.4:8080/checkpoint", false},         // another pod
		{"http://169.254.169.254/latest/meta-data", false}, // the cloud's metadata
		{"http://kubernetes.default.svc/api", false},       // another namespace
		{"http://a.b.train.svc/", false},                   // not a Service name
		{"http://example.com/", false},                     // outside
		{"https://trainer.train.svc/", false},              // only http
		{"http://user:pw@10.1.2.3/", false},                // credentials
		{"http://127.0.0.1:8080/", false},                  // loopback is the controller's own
		{"mailto:x@train.svc", false},
		{"", false},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "train", Annotations: map[string]string{v1alpha1.AnnotationCheckpointURL: tc.url}},
			Status:     corev1.PodStatus{PodIP: "10.1.2.3", PodIPs: []corev1.PodIP{{IP: "10.1.2.3"}, {IP: "fd00::7"}}},
		}
		u, why := checkpointURL(pod)
		if (u != nil) != tc.ok {
			t.Errorf("%q: allowed = %v (%s), want %v", tc.url, u != nil, why, tc.ok)
		}
		if u == nil && tc.url != "" && why == "" {
			t.Errorf("%q: refused without saying why", tc.url)
		}
	}
}

func TestCheckpointDialerRefusesSpecialAddresses(t *testing.T) {
	for addr, ok := range map[string]bool{
		"10.1.2.3:80": true, "[fd00::7]:80": true,
		"127.0.0.1:80": false, "[::1]:80": false, "169.254.169.254:80": false, "0.0.0.0:80": false, "224.0.0.1:80": false,
	} {
		if err := refuseSpecialAddrs("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("%s: error %v, want allowed = %v", addr, err, ok)
		}
	}
}

// TestCheckpointPosterPostsJSONInTheBackground: Post returns at once; the
// body carries the annotations' fields.
func TestCheckpointPosterPostsJSONInTheBackground(t *testing.T) {
	got := make(chan CheckpointRequest, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		var req CheckpointRequest
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&req) != nil {
			t.Errorf("%s %s: not a JSON POST", r.Method, r.Header.Get("Content-Type"))
		}
		got <- req
		<-release // a slow workload
	}))
	defer srv.Close()
	defer close(release)
	// The test server is on loopback, which the real dialer refuses: use
	// its client, keep the rest.
	p := &httpCheckpointPoster{client: srv.Client(), slots: make(chan struct{}, 1)}
	u, _ := url.Parse(srv.URL + "/checkpoint")
	want := CheckpointRequest{Pod: "train/trainer-0", RequestedAt: "2026-12-01T12:02:00Z", Deadline: "2026-12-01T12:22:00Z", Reason: "r"}
	start := time.Now()
	p.Post(t.Context(), u, want)
	p.Post(t.Context(), u, want) // no slot free: dropped, not queued
	if d := time.Since(start); d > time.Second {
		t.Errorf("Post took %v: it must not wait for the workload", d)
	}
	select {
	case req := <-got:
		if req != want {
			t.Errorf("body %+v, want %+v", req, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no POST arrived")
	}
}
