package remediation

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// authFilter is the metrics server's filter: the caller's bearer token is
// authenticated with a TokenReview and the request authorized with a
// SubjectAccessReview of its path as a nonResourceURL, as kube-rbac-proxy
// and controller-runtime's filters.WithAuthenticationAndAuthorization do.
// It is written here on client-go's typed clients because that filter links
// k8s.io/apiserver, which more than doubled the controller binary (42 to
// 97 MB). Answers are cached briefly (a scrape every few seconds would
// otherwise be two API calls each), a denial for less time than a grant.
func authFilter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("creating the metrics authentication client: %w", err)
	}
	a := &reviewer{cs: cs, now: time.Now, cache: map[[32]byte]review{}}
	return func(log logr.Logger, h http.Handler) (http.Handler, error) { return a.filter(log, h), nil }, nil
}

// filter answers 401 without a token the API server accepts, 403 when the
// token's user may not use the path's verb, 503 when the API server cannot
// tell; otherwise h serves.
func (a *reviewer) filter(log logr.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(r.Method)
		rv, err := a.review(r.Context(), token, verb, r.URL.Path)
		switch {
		case err != nil:
			// The detail (API server address, RBAC text) goes to the
			// log, not to a caller not yet authenticated.
			log.Error(err, "Reviewing a metrics request")
			w.Header().Set("Retry-After", "5")
			http.Error(w, "Service Unavailable: the API server could not review the request's token; try again", http.StatusServiceUnavailable)
		case !rv.authenticated:
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case !rv.allowed:
			http.Error(w, fmt.Sprintf("Forbidden: %s may not %s %s", rv.user, verb, r.URL.Path), http.StatusForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

const (
	allowTTL    = time.Minute
	denyTTL     = 10 * time.Second
	maxReviews  = 4096 // past it the cache is emptied
	reviewLimit = 10 * time.Second
)

type review struct {
	authenticated, allowed bool
	user                   string
	expires                time.Time
}

type reviewer struct {
	cs    kubernetes.Interface
	now   func() time.Time
	mu    sync.Mutex
	cache map[[32]byte]review
}

func (a *reviewer) review(ctx context.Context, token, verb, path string) (review, error) {
	key := sha256.Sum256([]byte(verb + "\x00" + path + "\x00" + token))
	a.mu.Lock()
	rv, ok := a.cache[key]
	a.mu.Unlock()
	if ok && a.now().Before(rv.expires) {
		return rv, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewLimit)
	defer cancel()
	tr, err := a.cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return review{}, fmt.Errorf("TokenReview: %w", err)
	}
	rv = review{authenticated: tr.Status.Authenticated, user: tr.Status.User.Username}
	if rv.authenticated {
		u := tr.Status.User
		extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
		sar, err := a.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		}}, metav1.CreateOptions{})
		if err != nil {
			return review{}, fmt.Errorf("SubjectAccessReview: %w", err)
		}
		rv.allowed = sar.Status.Allowed
	}
	ttl := denyTTL
	if rv.allowed {
		ttl = allowTTL
	}
	rv.expires = a.now().Add(ttl)
	a.mu.Lock()
	if len(a.cache) >= maxReviews {
		clear(a.cache)
	}
	a.cache[key] = rv
	a.mu.Unlock()
	return rv, nil
}
