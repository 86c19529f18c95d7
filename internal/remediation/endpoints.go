package remediation

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/auditapi"
	"github.com/gpuheal/gpuheal/internal/statuspage"
)

// mountEndpoints serves the audit API and, when asked, the status page
// beside /metrics (behind its TLS and authentication). With a store of its
// own (SQLite, a JSON lines file) each replica holds its own chain, so only
// the leader answers: a reader never sees two histories. A shared store
// (DynamoDB) is the same chain from every replica.
func mountEndpoints(mgr manager.Manager, reader audit.Reader, sharedStore, statusPage bool) error {
	gate := func(h http.Handler) http.Handler {
		if sharedStore {
			return h
		}
		return leaderOnly(mgr.Elected(), h)
	}
	if err := mgr.AddMetricsServerExtraHandler(auditapi.Prefix, gate(auditapi.Handler(reader))); err != nil {
		return fmt.Errorf("serving the audit API at %s: %w", auditapi.Prefix, err)
	}
	if !statusPage {
		return nil
	}
	// The page reads the manager's cache, under /status/ and /status
	// (which redirects below the API server's proxy path).
	h := gate(statuspage.New(mgr.GetClient(), statuspage.Options{}))
	for _, path := range []string{statuspage.Prefix, strings.TrimSuffix(statuspage.Prefix, "/")} {
		if err := mgr.AddMetricsServerExtraHandler(path, h); err != nil {
			return fmt.Errorf("serving the status page at %s: %w", path, err)
		}
	}
	return nil
}

// NotLeaderMessage is the 503 answer of a replica that is not the leader.
const NotLeaderMessage = "this controller replica is not the leader and keeps no audit log of its own: " +
	"ask the leader (the holder of the controller's leader Lease)"

// leaderOnly answers 503 until elected is closed (at once without leader
// election).
func leaderOnly(elected <-chan struct{}, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-elected:
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": NotLeaderMessage})
		}
	})
}
