package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/auditapi"
)

// TestControllerURLCarriesTheToken: an https --controller-url gets the
// kubeconfig's bearer token (the controller authenticates it) and checks the
// controller's certificate, not the API server's; plain http gets none.
func TestControllerURLCarriesTheToken(t *testing.T) {
	var auth []string
	mux := http.NewServeMux()
	mux.Handle(auditapi.Prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		auditapi.Handler(audit.NewMemory()).ServeHTTP(w, r)
	}))
	tlsSrv := httptest.NewTLSServer(mux)
	defer tlsSrv.Close()
	plain := httptest.NewServer(mux)
	defer plain.Close()

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://apiserver.invalid"}}]
users: [{name: u, user: {token: t0ken}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(url string, insecure bool) error {
		k := newCluster()
		k.kubeconfig = kubeconfig
		o := &auditSourceOptions{kube: k, controllerURL: url, controllerInsecure: insecure}
		r, closeFn, err := o.open(context.Background())
		if err != nil {
			return err
		}
		defer closeFn()
		_, err = r.Verify(context.Background())
		return err
	}
	if err := open(tlsSrv.URL, false); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("self-signed controller without --controller-insecure-skip-tls-verify: %v, want a certificate error", err)
	}
	if err := open(tlsSrv.URL, true); err != nil {
		t.Fatalf("https with the check skipped: %v", err)
	}
	if err := open(plain.URL, false); err != nil {
		t.Fatalf("plain http: %v", err)
	}
	if len(auth) != 2 || auth[0] != "Bearer t0ken" || auth[1] != "" {
		t.Errorf("Authorization headers %q, want the token over https only", auth)
	}
}
