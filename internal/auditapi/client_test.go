package auditapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/auditapi/auditapitest"
)

func TestServiceProxyURL(t *testing.T) {
	tests := []struct {
		host string
		svc  Service
		want string
	}{
		{"https://10.0.0.1:6443", Service{},
			"https://10.0.0.1:6443/api/v1/namespaces/gpuheal/services/http:gpuheal-controller:metrics/proxy"},
		{"10.0.0.1:6443", Service{Namespace: "ops", Name: "heal", Port: "8080", Scheme: "https"},
			"https://10.0.0.1:6443/api/v1/namespaces/ops/services/https:heal:8080/proxy"},
		// Rancher and other front ends serve a cluster under a path.
		{"https://rancher.example.com/k8s/clusters/c-abc12/", Service{},
			"https://rancher.example.com/k8s/clusters/c-abc12/api/v1/namespaces/gpuheal/services/http:gpuheal-controller:metrics/proxy"},
		{"http://127.0.0.1:8001", Service{Port: "metrics"},
			"http://127.0.0.1:8001/api/v1/namespaces/gpuheal/services/http:gpuheal-controller:metrics/proxy"},
	}
	for _, tt := range tests {
		got, err := ServiceProxyURL(tt.host, tt.svc)
		if err != nil || got != tt.want {
			t.Errorf("ServiceProxyURL(%q, %+v) = %q, %v; want %q", tt.host, tt.svc, got, err, tt.want)
		}
	}
	bad := []struct {
		host string
		svc  Service
		want string
	}{
		{"", Service{}, "no API server"},
		{"https://h", Service{Namespace: "a/b"}, `namespace "a/b"`},
		{"https://h", Service{Name: "x..y"}, `service "x..y"`},
		{"https://h", Service{Port: "70000"}, `port "70000"`},
		{"https://h", Service{Port: "not_a_port_name!"}, `port "not_a_port_name!"`},
		{"https://h", Service{Scheme: "ftp"}, `scheme "ftp"`},
	}
	for _, tt := range bad {
		if _, err := ServiceProxyURL(tt.host, tt.svc); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ServiceProxyURL(%q, %+v) error %v, want one naming %s", tt.host, tt.svc, err, tt.want)
		}
	}
}

// The service-proxy client sends the config's credentials to the proxy path.
func TestServiceProxyClient(t *testing.T) {
	now := time.Now().UTC()
	backend, _ := fixture(t, now)
	const prefix = "/api/v1/namespaces/gpuheal/services/http:gpuheal-controller:metrics/proxy"
	var seen []string
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path)
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, `{"kind":"Status","message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if !strings.HasPrefix(r.URL.Path, prefix+"/audit/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"services \"gpuheal-controller\" not found","reason":"NotFound","code":404}`))
			return
		}
		// Forward to the controller as the API server's proxy would.
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, backend.URL+strings.TrimPrefix(r.URL.RequestURI(), prefix), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		var buf [4096]byte
		for {
			n, err := resp.Body.Read(buf[:])
			_, _ = w.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}))
	defer apiserver.Close()

	c, err := NewServiceProxyClient(&rest.Config{Host: apiserver.URL, BearerToken: "t0ken"}, Service{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := c.Query(context.Background(), audit.Filter{Node: auditapitest.NodeB, Since: now.Add(-2 * time.Hour), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(keys(auditapitest.Records(now)[12:]), keys(recs)); diff != "" {
		t.Errorf("records through the proxy (-want +got):\n%s", diff)
	}
	if len(seen) != 1 || seen[0] != prefix+"/audit/records" {
		t.Errorf("paths asked of the API server: %q", seen)
	}
	rep, err := c.Verify(context.Background())
	if err != nil || !rep.OK || rep.Records != 16 {
		t.Errorf("verify through the proxy: %+v %v", rep, err)
	}

	other, err := NewServiceProxyClient(&rest.Config{Host: apiserver.URL, BearerToken: "t0ken"}, Service{Name: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Verify(context.Background())
	if err == nil || !strings.Contains(err.Error(), `404 Not Found: services "gpuheal-controller" not found`) {
		t.Errorf("missing service: %v, want the API server's message", err)
	}
}

func TestClientPassesServerErrors(t *testing.T) {
	srv, _ := fixture(t, time.Now())
	c, err := NewClient(srv.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.URL("verify", nil); got != srv.URL+"/audit/verify" {
		t.Errorf("URL = %s", got)
	}
	_, err = c.Query(context.Background(), audit.Filter{Limit: -1, Node: "a\x00b"})
	if err != nil {
		t.Errorf("a node name with a NUL is a valid query (no match): %v", err)
	}
	nilSrv := httptest.NewServer(Handler(nil))
	defer nilSrv.Close()
	c, _ = NewClient(nilSrv.URL, nil)
	if _, err := c.Verify(context.Background()); err == nil || !strings.Contains(err.Error(), "503 Service Unavailable: this controller keeps no readable audit store") {
		t.Errorf("nil reader: %v", err)
	}
	for _, u := range []string{"localhost:8080", "ftp://h", "http://h?x=1", "http://"} {
		if _, err := NewClient(u, nil); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
}
