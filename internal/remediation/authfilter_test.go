package remediation

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeReviews answers TokenReviews for the tokens in users (token → user)
// and SubjectAccessReviews for the user/path pairs in grants; reviewsFail
// makes the API server fail every review.
type fakeReviews struct {
	users       map[string]string
	grants      map[string]bool // user + " " + path
	reviewsFail bool
	calls       int
}

func (f *fakeReviews) reviewer() *reviewer {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.calls++
		if f.reviewsFail {
			return true, nil, errors.New("dial tcp 10.96.0.1:443: connection refused")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if u, ok := f.users[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u}}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.calls++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = f.grants[sar.Spec.User+" "+sar.Spec.NonResourceAttributes.Path]
		return true, sar, nil
	})
	return &reviewer{cs: cs, now: time.Now, cache: map[[32]byte]review{}}
}

func authGet(t *testing.T, h http.Handler, path, token string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAuthFilterGrantsOnlyWhatRBACAllows(t *testing.T) {
	f := &fakeReviews{users: map[string]string{"tok-prom": "prometheus", "tok-eve": "eve"}, grants: map[string]bool{"prometheus /metrics": true}}
	h := f.reviewer().filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "tok-unknown", http.StatusUnauthorized},
		{"/metrics", "tok-eve", http.StatusForbidden},
		{"/metrics", "tok-prom", http.StatusOK},
		// A grant of one path (cached) serves neither another path nor
		// another token.
		{"/audit/records", "tok-prom", http.StatusForbidden},
		{"/metrics", "tok-eve", http.StatusForbidden},
		{"/metrics", "tok-prom", http.StatusOK},
	} {
		if w := authGet(t, h, c.path, c.token); w.Code != c.want {
			t.Errorf("GET %s with token %q: %d %s, want %d", c.path, c.token, w.Code, strings.TrimSpace(w.Body.String()), c.want)
		}
	}
}

func TestAuthFilterFailsClosedWithoutDetail(t *testing.T) {
	f := &fakeReviews{reviewsFail: true}
	served := false
	h := f.reviewer().filter(logr.Discard(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true }))
	w := authGet(t, h, "/metrics", "tok-any")
	if served || w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("API server down: served %v, %d (Retry-After %q), want 503 with Retry-After and nothing served", served, w.Code, w.Header().Get("Retry-After"))
	}
	if strings.Contains(w.Body.String(), "10.96.0.1") {
		t.Errorf("the answer to an unauthenticated caller leaks the API server's error: %q", w.Body.String())
	}
	// An error is not cached: the next request asks again.
	before := f.calls
	f.reviewsFail = false
	authGet(t, h, "/metrics", "tok-any")
	if f.calls == before {
		t.Error("a failed review was cached")
	}
}
