//go:build integration

package remediation

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestEndpointsNeedAuthAndTheLeader runs two replicas with secure metrics
// on the real API server. Over TLS, /metrics, the audit API and the status
// page answer 401 without a token, 403 to a token without the reader role,
// 200 with it; the replica that is not the leader answers the audit API and
// the status page with 503 (its metrics still answer).
func TestEndpointsNeedAuthAndTheLeader(t *testing.T) {
	env := testcluster.Start(t, testenv.Options{})
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	// The reader role the chart ships (controller-service.yaml).
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gpuheal-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/audit/*", "/status", "/status/*"}, Verbs: []string{"get"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := map[string]string{}
	for _, sa := range []string{"reader", "stranger"} {
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		token[sa] = tr.Status.Token
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := func(o ManagerOptions) (manager.Manager, func()) {
		mgr, err := NewManager(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := mountEndpoints(mgr, audit.NewMemory(), false, true); err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		return mgr, func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("manager stopped with error: %v", err)
			}
		}
	}
	opts := func() ManagerOptions {
		return ManagerOptions{RestConfig: env.Config, MetricsAddress: freeAddr(t), HealthAddress: freeAddr(t), SecureMetrics: true,
			LeaderElection: true, LeaderElectionNamespace: "default", LeaderElectionID: "gpuheal-endpoints-test", GracefulShutdown: 5 * time.Second}
	}
	a, b := opts(), opts()
	mgrA, stopA := start(a)
	defer stopA()
	select {
	case <-mgrA.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("first replica not elected within 30s")
	}
	mgrB, stopB := start(b)
	defer stopB()
	waitHealthy(t, b.HealthAddress)
	select {
	case <-mgrB.Elected():
		t.Fatal("second replica elected while the first holds the lease")
	default:
	}

	// The certificate is self-signed; what matters here is that the
	// connection is TLS and who may use it.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	get := func(addr, path, tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s%s: %v", addr, path, err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		if resp.TLS == nil {
			t.Errorf("GET %s%s answered without TLS", addr, path)
		}
		return resp.StatusCode, string(body)
	}
	for _, addr := range []string{a.MetricsAddress, b.MetricsAddress} {
		testproc.EventuallyTrue(t, 30*time.Second, "metrics server of "+addr+" listening", func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				_ = c.Close()
			}
			return err == nil
		})
	}
	for _, path := range []string{"/metrics", "/audit/verify", "/status/"} {
		for _, c := range []struct {
			who  string
			want int
		}{{"", http.StatusUnauthorized}, {"stranger", http.StatusForbidden}, {"reader", http.StatusOK}} {
			if code, body := get(a.MetricsAddress, path, token[c.who]); code != c.want {
				t.Errorf("leader %s with token of %q: %d %.200s, want %d", path, c.who, code, body, c.want)
			}
		}
	}
	if code, _ := get(b.MetricsAddress, "/metrics", token["reader"]); code != http.StatusOK {
		t.Errorf("standby /metrics: %d, want 200 (every replica has metrics)", code)
	}
	for _, path := range []string{"/audit/verify", "/audit/records", "/status/"} {
		if code, body := get(b.MetricsAddress, path, token["reader"]); code != http.StatusServiceUnavailable || !strings.Contains(body, "not the leader") {
			t.Errorf("standby %s: %d %.200s, want 503 saying it is not the leader", path, code, body)
		}
		if code, _ := get(b.MetricsAddress, path, ""); code != http.StatusUnauthorized {
			t.Errorf("standby %s without a token: %d, want 401 (authentication comes first)", path, code)
		}
	}
	// Plain HTTP is not served.
	resp, err := http.Get(fmt.Sprintf("http://%s/metrics", a.MetricsAddress))
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP /metrics answered 200")
		}
	}
}
