// Package aws reboots and replaces GPU nodes that run on EC2: reboot through
// EC2 RebootInstances, replace by terminating the instance in its Auto
// Scaling group (which then launches a new one), status through EC2
// DescribeInstances, and scale-in protection through Auto Scaling
// SetInstanceProtection. The node's region and instance come from its
// spec.providerID, so one controller serves nodes in several regions.
//
// See docs/aws.md for the IAM policy it needs.
package aws

import (
	"context"
	"fmt"
	"sync"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/gpuheal/gpuheal/internal/provider"
)

// Provider is the aws remediation provider. It is safe for concurrent use.
type Provider struct {
	cfg  awssdk.Config
	opts options

	mu       sync.Mutex
	byRegion map[string]*regionClients

	// done remembers what this process already did per incident, so that a
	// call repeated after a lost status update neither reboots twice nor
	// needs the Auto Scaling group to tell it the activity id again.
	done *memo
	// groups remembers each instance's Auto Scaling group (region/id →
	// name) for SetScaleInProtection, which the controller calls whenever
	// a node's tier changes.
	groups *memo
}

type regionClients struct {
	ec2 *ec2.Client
	asg *autoscaling.Client
	sts *sts.Client
}

var (
	_ provider.Provider         = (*Provider)(nil)
	_ provider.ScaleInProtector = (*Provider)(nil)
)

// New makes a provider. Without WithConfig it loads credentials the SDK's
// usual way (environment, IRSA or EKS Pod Identity, shared config, IMDS),
// lazily: a missing credential shows on the first call, not here.
func New(ctx context.Context, opts ...Option) (*Provider, error) {
	o := defaultOptions()
	for _, fn := range opts {
		fn(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	var cfg awssdk.Config
	if o.cfg != nil {
		cfg = *o.cfg
	} else {
		var err error
		if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
			return nil, fmt.Errorf("aws provider: loading AWS configuration: %w", err)
		}
	}
	return &Provider{
		cfg:      cfg,
		opts:     o,
		byRegion: map[string]*regionClients{},
		done:     newMemo(1024),
		groups:   newMemo(8192),
	}, nil
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return provider.AWS }

// clients returns the region's clients, making them on first use. Clients
// are cheap to make but each owns a retry token bucket, and sharing that
// bucket across calls is what stops a throttled region from being hammered.
func (p *Provider) clients(region string) *regionClients {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.byRegion[region]; ok {
		return c
	}
	c := &regionClients{
		ec2: ec2.NewFromConfig(p.cfg, func(o *ec2.Options) {
			o.Region = region
			o.Retryer = p.retryer()
			// Zero keeps AWS_MAX_ATTEMPTS from wrapping our retryer.
			o.RetryMaxAttempts = 0
			if p.opts.ec2Endpoint != "" {
				o.BaseEndpoint = awssdk.String(p.opts.ec2Endpoint)
			}
		}),
		asg: autoscaling.NewFromConfig(p.cfg, func(o *autoscaling.Options) {
			o.Region = region
			o.Retryer = p.retryer(asgTransientCodes...)
			o.RetryMaxAttempts = 0
			if p.opts.asgEndpoint != "" {
				o.BaseEndpoint = awssdk.String(p.opts.asgEndpoint)
			}
		}),
		// The regional STS endpoint, as IRSA and Pod Identity use: only
		// the preflight asks it who we are.
		sts: sts.NewFromConfig(p.cfg, func(o *sts.Options) {
			o.Region = region
			o.Retryer = p.retryer()
			o.RetryMaxAttempts = 0
			if p.opts.stsEndpoint != "" {
				o.BaseEndpoint = awssdk.String(p.opts.stsEndpoint)
			}
		}),
	}
	p.byRegion[region] = c
	return c
}

// asgTransientCodes are Auto Scaling errors that mean "not now" rather than
// "no": another update to the group is under way.
var asgTransientCodes = []string{"ResourceContention", "ScalingActivityInProgress"}

// retryer is the SDK's standard retryer: exponential backoff with full
// jitter, retrying 5xx, connection errors and the throttling codes
// (Throttling, RequestLimitExceeded, ...) listed in retry.DefaultThrottleErrorCodes.
func (p *Provider) retryer(extraCodes ...string) awssdk.Retryer {
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = p.opts.maxAttempts
		so.MaxBackoff = p.opts.maxBackoff
		if len(extraCodes) > 0 {
			codes := map[string]struct{}{}
			for _, c := range extraCodes {
				codes[c] = struct{}{}
			}
			so.Retryables = append(so.Retryables, retry.RetryableErrorCode{Codes: codes})
		}
	})
}
