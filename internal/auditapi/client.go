package auditapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/jsonl"
)

// Client reads a controller's audit log through Handler. It is an
// audit.Reader, so the CLI treats it like a store opened offline.
type Client struct {
	base string // up to, without, the /audit/ prefix
	hc   *http.Client
	// unauthorized is added to a 401 answer's error: what to do instead.
	unauthorized string
}

// ProxyUnauthorized explains a 401 through the API server's service proxy:
// the API server authenticates the caller and then drops the token, and a
// controller serving with --metrics-secure authenticates every request
// itself.
const ProxyUnauthorized = "the controller authenticates each request's token, which the API server's service proxy does not forward: " +
	"kubectl port-forward to the controller's leader pod, then use --controller-url https://localhost:8080"

var _ audit.Reader = (*Client)(nil)

// NewClient talks to the controller at baseURL (http://localhost:8080
// through a port-forward, say); Prefix is appended. A nil hc means
// http.DefaultClient.
func NewClient(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("controller URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("controller URL %q: want http(s)://host[:port]", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("controller URL %q: want no query or fragment", baseURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return &Client{base: u.String(), hc: hc}, nil
}

// Service names the controller's Service for the API server's proxy.
type Service struct {
	Namespace string // default "gpuheal"
	Name      string // default "gpuheal-controller"
	// Port is the Service port's name or number (default "metrics").
	Port string
	// Scheme the proxy uses towards the pod: "http" (default) or "https".
	Scheme string
}

// Defaults of Service.
const (
	DefaultNamespace = "gpuheal"
	DefaultService   = "gpuheal-controller"
	DefaultPort      = "metrics"
	DefaultScheme    = "http"
)

func (s Service) withDefaults() Service {
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	if s.Name == "" {
		s.Name = DefaultService
	}
	if s.Port == "" {
		s.Port = DefaultPort
	}
	if s.Scheme == "" {
		s.Scheme = DefaultScheme
	}
	return s
}

// ServiceProxyURL is the base URL, on the API server at host (a
// rest.Config's Host, which may carry a path), of the proxy to the
// Service: {host}/api/v1/namespaces/{ns}/services/{scheme}:{name}:{port}/proxy.
func ServiceProxyURL(host string, s Service) (string, error) {
	s = s.withDefaults()
	if errs := validation.IsDNS1123Label(s.Namespace); len(errs) > 0 {
		return "", fmt.Errorf("namespace %q: %s", s.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1035Label(s.Name); len(errs) > 0 {
		return "", fmt.Errorf("service %q: %s", s.Name, strings.Join(errs, "; "))
	}
	if n, err := strconv.Atoi(s.Port); err == nil {
		if n < 1 || n > 65535 {
			return "", fmt.Errorf("service port %q: want 1 to 65535", s.Port)
		}
	} else if errs := validation.IsValidPortName(s.Port); len(errs) > 0 {
		return "", fmt.Errorf("service port %q: %s", s.Port, strings.Join(errs, "; "))
	}
	if s.Scheme != "http" && s.Scheme != "https" {
		return "", fmt.Errorf("scheme %q: want http or https", s.Scheme)
	}
	u, err := hostURL(host)
	if err != nil {
		return "", err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") +
		fmt.Sprintf("/api/v1/namespaces/%s/services/%s:%s:%s/proxy", s.Namespace, s.Scheme, s.Name, s.Port)
	u.RawPath = ""
	return u.String(), nil
}

// hostURL reads a rest.Config Host, which may lack a scheme ("10.0.0.1:6443").
func hostURL(host string) (*url.URL, error) {
	if host == "" {
		return nil, fmt.Errorf("the Kubernetes config names no API server")
	}
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("API server address %q is not a URL", host)
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// NewServiceProxyClient reaches the controller through the API server that
// cfg points at, with cfg's credentials (rest.HTTPClientFor). The caller
// needs get on services/proxy in the Service's namespace.
func NewServiceProxyClient(cfg *rest.Config, s Service) (*Client, error) {
	base, err := ServiceProxyURL(cfg.Host, s)
	if err != nil {
		return nil, err
	}
	// The export streams for as long as the log is long; the caller's
	// context bounds the requests instead.
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building an HTTP client for %s: %w", cfg.Host, err)
	}
	c, err := NewClient(base, hc)
	if err != nil {
		return nil, err
	}
	c.unauthorized = ProxyUnauthorized
	return c, nil
}

// URL is the address of endpoint ("records", "verify", "export").
func (c *Client) URL(endpoint string, q url.Values) string {
	s := c.base + Prefix + endpoint
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

// Query implements audit.Reader. A query for more than a page holds
// (MaxLimit; a negative Limit is every match) reads the export stream and
// filters it here.
func (c *Client) Query(ctx context.Context, f audit.Filter) ([]audit.Record, error) {
	if f.Limit < 0 || f.Limit > MaxLimit {
		var recs []audit.Record
		err := c.get(ctx, ExportPath, nil, func(body io.Reader) (err error) {
			recs, err = jsonl.Query(body, f)
			return err
		})
		return recs, err
	}
	q := url.Values{}
	if f.Node != "" {
		q.Set(ParamNode, f.Node)
	}
	if f.Incident != "" {
		q.Set(ParamIncident, f.Incident)
	}
	if !f.Since.IsZero() {
		q.Set(ParamSince, f.Since.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit != 0 {
		q.Set(ParamLimit, strconv.Itoa(f.Limit))
	}
	var recs []audit.Record
	err := c.get(ctx, RecordsPath, q, func(body io.Reader) error {
		return json.NewDecoder(body).Decode(&recs)
	})
	return recs, err
}

// Verify implements audit.Reader: the controller verifies its store.
func (c *Client) Verify(ctx context.Context) (audit.Report, error) {
	var v VerifyReport
	if err := c.get(ctx, VerifyPath, nil, func(body io.Reader) error {
		return json.NewDecoder(body).Decode(&v)
	}); err != nil {
		return audit.Report{}, err
	}
	return v.Report()
}

// Export implements audit.Reader, copying the stream to w as it comes.
func (c *Client) Export(ctx context.Context, w io.Writer) error {
	return c.get(ctx, ExportPath, nil, func(body io.Reader) error {
		_, err := io.Copy(w, body)
		return err
	})
}

func (c *Client) get(ctx context.Context, endpoint string, q url.Values, read func(io.Reader) error) error {
	u := c.URL(endpoint, q)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("audit API request %s: %w", u, err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("audit API GET %s: %w", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg := errorMessage(resp.Body)
		if resp.StatusCode == http.StatusUnauthorized && c.unauthorized != "" {
			msg += " (" + c.unauthorized + ")"
		}
		return fmt.Errorf("audit API GET %s: %s: %s", u, resp.Status, msg)
	}
	if err := read(resp.Body); err != nil {
		return fmt.Errorf("audit API GET %s: reading the answer: %w", u, err)
	}
	return nil
}

// errorMessage reads our error body, or the API server's Status (a
// missing Service, missing rights), or else the first bytes of the text.
func errorMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		switch {
		case e.Error != "":
			return e.Error
		case e.Message != "":
			return e.Message
		}
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	if s == "" {
		return "no message"
	}
	return s
}
