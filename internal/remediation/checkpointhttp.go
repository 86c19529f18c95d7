package remediation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// CheckpointRequest is the JSON body POSTed to a pod's checkpoint URL: the
// same fields as the pod's annotations.
type CheckpointRequest struct {
	Pod         string `json:"pod"` // namespace/name
	RequestedAt string `json:"requestedAt"`
	Deadline    string `json:"deadline"`
	Reason      string `json:"reason"`
}

// CheckpointPoster delivers a checkpoint request to the URL a pod declares.
// Post must return at once: the reconcile never waits on a workload.
type CheckpointPoster interface {
	Post(ctx context.Context, target *url.URL, req CheckpointRequest)
}

// checkpointPostTimeout bounds one POST, connection included.
const checkpointPostTimeout = 5 * time.Second

// maxCheckpointPosts bounds the POSTs in flight; more are dropped (the
// annotations carry the same request).
const maxCheckpointPosts = 32

// httpCheckpointPoster posts in the background, a few at a time.
type httpCheckpointPoster struct {
	client *http.Client
	slots  chan struct{}
}

// NewHTTPCheckpointPoster is the real poster: no redirects, no proxy, a
// short timeout, and a dialer that refuses loopback, link-local (the
// clouds' metadata endpoints), unspecified and multicast addresses
// whatever name led there (a Service of type ExternalName resolves
// outside the cluster).
func NewHTTPCheckpointPoster() CheckpointPoster {
	d := &net.Dialer{Timeout: checkpointPostTimeout, Control: refuseSpecialAddrs}
	return &httpCheckpointPoster{
		client: &http.Client{
			Timeout:       checkpointPostTimeout,
			Transport:     &http.Transport{Proxy: nil, DialContext: d.DialContext, DisableKeepAlives: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		slots: make(chan struct{}, maxCheckpointPosts),
	}
}

func refuseSpecialAddrs(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() {
		return fmt.Errorf("checkpoint URL: address %s refused", host)
	}
	return nil
}

func (p *httpCheckpointPoster) Post(ctx context.Context, target *url.URL, req CheckpointRequest) {
	logger := log.FromContext(ctx).WithValues("pod", req.Pod, "url", target.Redacted())
	select {
	case p.slots <- struct{}{}:
	default:
		logger.Info("checkpoint POST dropped: too many in flight; the pod's annotations carry the request")
		return
	}
	body, _ := json.Marshal(req) // strings only: cannot fail
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointPostTimeout)
	go func() {
		defer func() { <-p.slots }()
		defer cancel()
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
		if err != nil {
			logger.Error(err, "checkpoint POST")
			return
		}
		r.Header.Set("Content-Type", "application/json")
		resp, err := p.client.Do(r)
		if err != nil {
			logger.Error(err, "checkpoint POST")
			return
		}
		_ = resp.Body.Close()
		logger.V(1).Info("checkpoint POST answered", "status", resp.StatusCode)
	}()
}

// checkpointURL is the pod's checkpoint URL when it may be called: http://
// (no credentials) to the pod's own IP, or to a Service of the pod's own
// namespace by its cluster-local name. A pod's owner writes the
// annotation; were any URL allowed, anyone who can create a pod could make
// the controller, from inside the cluster and with its network identity,
// call hosts of their choosing (server-side request forgery): the cloud's
// metadata endpoint, the API server, another tenant's services. nil and
// why not, when it may not; nil and "" when the pod declares none.
func checkpointURL(pod *corev1.Pod) (*url.URL, string) {
	raw, ok := pod.Annotations[v1alpha1.AnnotationCheckpointURL]
	if !ok || raw == "" {
		return nil, ""
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, "not a URL"
	case u.Scheme != "http":
		return nil, "only http:// is allowed"
	case u.User != nil:
		return nil, "credentials in the URL are not allowed"
	case u.Opaque != "":
		return nil, "not a URL with a host"
	}
	host := strings.ToLower(u.Hostname())
	if ip := net.ParseIP(host); ip != nil {
		for _, own := range podIPs(pod) {
			if ip.Equal(net.ParseIP(own)) {
				return u, ""
			}
		}
		return nil, "an IP other than the pod's own"
	}
	svc, ok := strings.CutSuffix(host, "."+pod.Namespace+".svc")
	if !ok {
		svc, ok = strings.CutSuffix(host, "."+pod.Namespace+".svc.cluster.local")
	}
	if !ok || svc == "" || strings.Contains(svc, ".") {
		return nil, fmt.Sprintf("host %q is neither the pod's IP nor a Service of namespace %s (<svc>.%s.svc)", host, pod.Namespace, pod.Namespace)
	}
	return u, ""
}

func podIPs(p *corev1.Pod) []string {
	var ips []string
	if p.Status.PodIP != "" {
		ips = append(ips, p.Status.PodIP)
	}
	for _, ip := range p.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	return ips
}
