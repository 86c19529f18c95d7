package aws

import (
	"fmt"
	"net/url"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
)

// Retry defaults. Eight attempts with a 20 s cap ride out a burst of EC2 API
// throttling (RequestLimitExceeded is per account and region, so a busy
// account throttles us for reasons of its own) without holding a
// remediation for more than about a minute and a half.
const (
	DefaultMaxAttempts = 8
	DefaultMaxBackoff  = 20 * time.Second
)

// Option configures New.
type Option func(*options)

type options struct {
	cfg         *awssdk.Config
	ec2Endpoint string
	asgEndpoint string
	stsEndpoint string
	maxAttempts int
	maxBackoff  time.Duration
}

func defaultOptions() options {
	return options{maxAttempts: DefaultMaxAttempts, maxBackoff: DefaultMaxBackoff}
}

// WithConfig uses cfg (credentials, HTTP client, logger) instead of loading
// the default chain. Its Region is ignored: every call goes to the region of
// the node's zone. Tests pass static credentials this way.
func WithConfig(cfg awssdk.Config) Option {
	return func(o *options) { c := cfg.Copy(); o.cfg = &c }
}

// WithEC2Endpoint sends EC2 calls to url instead of the regional endpoint:
// an interface VPC endpoint for clusters without internet egress, or a fake.
func WithEC2Endpoint(url string) Option {
	return func(o *options) { o.ec2Endpoint = url }
}

// WithAutoScalingEndpoint does for Auto Scaling what WithEC2Endpoint does
// for EC2.
func WithAutoScalingEndpoint(url string) Option {
	return func(o *options) { o.asgEndpoint = url }
}

// WithSTSEndpoint does for STS (the preflight's GetCallerIdentity) what
// WithEC2Endpoint does for EC2.
func WithSTSEndpoint(url string) Option {
	return func(o *options) { o.stsEndpoint = url }
}

// WithMaxAttempts bounds the attempts of one call, the first included.
func WithMaxAttempts(n int) Option {
	return func(o *options) { o.maxAttempts = n }
}

// WithMaxBackoff caps the wait between attempts. The SDK starts throttling
// backoff at one second whatever its base delay, so tests set this to a
// millisecond to keep retries fast.
func WithMaxBackoff(d time.Duration) Option {
	return func(o *options) { o.maxBackoff = d }
}

func (o options) validate() error {
	if o.maxAttempts < 1 {
		return fmt.Errorf("aws provider: max attempts %d: must be at least 1", o.maxAttempts)
	}
	if o.maxBackoff < 0 {
		return fmt.Errorf("aws provider: max backoff %s: must not be negative", o.maxBackoff)
	}
	for name, ep := range map[string]string{"EC2": o.ec2Endpoint, "Auto Scaling": o.asgEndpoint, "STS": o.stsEndpoint} {
		if ep == "" {
			continue
		}
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("aws provider: %s endpoint %q: want an http or https URL with a host", name, ep)
		}
	}
	return nil
}
