// Package statuspage serves a read-only web page of the fleet from the
// controller: a map of the GPU nodes colored by health and tier, the recent
// incidents, time to recover over time and each policy's breaker, updated
// live. It is mounted on the controller's metrics server (opt-in,
// --status-page) and reached through the API server's service proxy or a
// port-forward, so no extra port or Ingress is needed.
//
//	GET /status/                the page (HTML, CSS and JS embedded in the binary)
//	GET /status/api/fleet       JSON fleetview.View: nodes, totals, policies and breakers
//	GET /status/api/incidents   JSON Incidents: recent NodeRemediations, newest first
//	GET /status/api/events      Server-Sent Events: "fleet" and "incidents" when they change
//
// The page uses relative URLs only: behind the service proxy it lives at
// /api/v1/namespaces/NS/services/NAME:metrics/proxy/status/.
package statuspage

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Prefix is where the controller mounts the handler.
const Prefix = "/status/"

// Paths below Prefix.
const (
	FleetPath     = "api/fleet"
	IncidentsPath = "api/incidents"
	EventsPath    = "api/events"
)

// Defaults of Options.
const (
	DefaultInterval     = 2 * time.Second
	DefaultMaxIncidents = 200
)

// Options tunes the handler; the zero value is ready to use.
type Options struct {
	// Interval is how often the live stream looks for changes
	// (default DefaultInterval). Reads come from the controller's cache,
	// so a look costs no API request.
	Interval time.Duration
	// MaxIncidents is how many recent incidents are shown
	// (default DefaultMaxIncidents).
	MaxIncidents int
	// KeepAlive is how long the stream may stay silent before a ping is
	// sent (default 15s), so that proxies keep it open and the page can
	// tell a stalled stream from a quiet fleet.
	KeepAlive time.Duration
	// Clock; nil means the real one.
	Clock clock.WithTicker
}

// New returns the status page handler, reading Nodes, NodeRemediations and
// RemediationPolicies from reader. Give it the controller manager's cached
// client: every view then lists only the GPU nodes the cache holds and costs
// the API server nothing. It serves paths under Prefix, and also works behind
// http.StripPrefix.
func New(reader client.Reader, opts Options) http.Handler {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxIncidents <= 0 {
		opts.MaxIncidents = DefaultMaxIncidents
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &handler{
		opts: opts,
		// Viewers share one snapshot per half interval: a second browser
		// tab does not double the work of listing a large fleet.
		snaps: &snapshots{reader: reader, clock: opts.Clock, maxAge: opts.Interval / 2, maxIncidents: opts.MaxIncidents},
	}
}

type handler struct {
	opts  Options
	snaps *snapshots
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: the status page is read-only", r.Method))
		return
	}
	p := strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(Prefix, "/"))
	if p == "" {
		// "/status" without the slash: the page's relative URLs would
		// resolve one level up. The redirect is relative too, so that it
		// stays below the API server's proxy path.
		w.Header().Set("Location", strings.TrimSuffix(Prefix[1:], "/")+"/")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	p = strings.TrimPrefix(p, "/")
	switch p {
	case FleetPath, IncidentsPath:
		fleet, incidents, err := h.snaps.get(r.Context())
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		body := fleet
		if p == IncidentsPath {
			body = incidents
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(body)
	case EventsPath:
		h.events(w, r)
	default:
		if !serveStatic(w, p) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no such status page path %q: the page is %s, its data under %sapi/", r.URL.Path, Prefix, Prefix))
		}
	}
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorBody{Error: msg})
}

func jsonError(err error) ([]byte, error) { return json.Marshal(errorBody{Error: err.Error()}) }
