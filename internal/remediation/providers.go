package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/provider/aws"
	"github.com/gpuheal/gpuheal/internal/provider/clusterapi"
	"github.com/gpuheal/gpuheal/internal/provider/karpenter"
	"github.com/gpuheal/gpuheal/internal/provider/kwok"
	"github.com/gpuheal/gpuheal/internal/provider/none"
	"github.com/gpuheal/gpuheal/internal/score"
)

// ProviderOptions chooses and configures the providers a controller offers
// to its policies.
type ProviderOptions struct {
	// Enabled names the providers (default: aws, karpenter, clusterapi,
	// none). kwok must be asked for: it deletes and creates Node objects as
	// a simulated cloud and has no place in a real cluster.
	Enabled []string
	// Kwok tunes the simulated cloud.
	Kwok kwok.Options
	// AWSEC2Endpoint and AWSAutoScalingEndpoint override the AWS endpoints
	// (VPC endpoints, tests).
	AWSEC2Endpoint, AWSAutoScalingEndpoint string
	// AWSSTSEndpoint overrides the STS endpoint the preflight asks.
	AWSSTSEndpoint string
}

// DefaultProviders are enabled when none are named.
var DefaultProviders = []string{provider.AWS, provider.Karpenter, provider.ClusterAPI, provider.None}

// NewProviders builds the enabled providers. They read through a client
// that goes straight to the API server: a provider checks whether its action
// already happened, and a cache a few milliseconds behind could say no.
// The kwok simulation's boot clock is added to the manager.
func NewProviders(ctx context.Context, mgr manager.Manager, o ProviderOptions) (provider.Set, error) {
	enabled := o.Enabled
	if len(enabled) == 0 {
		enabled = DefaultProviders
	}
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating provider client: %w", err)
	}
	set := provider.Set{}
	for _, name := range enabled {
		switch name {
		case provider.AWS:
			var opts []aws.Option
			if o.AWSEC2Endpoint != "" {
				opts = append(opts, aws.WithEC2Endpoint(o.AWSEC2Endpoint))
			}
			if o.AWSAutoScalingEndpoint != "" {
				opts = append(opts, aws.WithAutoScalingEndpoint(o.AWSAutoScalingEndpoint))
			}
			if o.AWSSTSEndpoint != "" {
				opts = append(opts, aws.WithSTSEndpoint(o.AWSSTSEndpoint))
			}
			p, err := aws.New(ctx, opts...)
			if err != nil {
				return nil, fmt.Errorf("aws provider: %w", err)
			}
			set[name] = p
		case provider.Karpenter:
			set[name] = karpenter.New(direct)
		case provider.ClusterAPI:
			set[name] = clusterapi.New(direct)
		case provider.Kwok:
			set[name] = kwok.New(direct, o.Kwok)
			if err := mgr.Add(kwok.NewBooter(direct, o.Kwok)); err != nil {
				return nil, err
			}
		case provider.None:
			set[name] = none.New()
		default:
			return nil, fmt.Errorf("unknown provider %q (known: aws, karpenter, clusterapi, kwok, none)", name)
		}
	}
	return set, nil
}

// ParseProviders reads a comma-separated provider list.
func ParseProviders(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains([]string{provider.AWS, provider.Karpenter, provider.ClusterAPI, provider.Kwok, provider.None}, name) {
			return nil, fmt.Errorf("unknown provider %q (known: aws, karpenter, clusterapi, kwok, none)", name)
		}
		out = append(out, name)
	}
	return out, nil
}

// RunOptions is everything the controller process needs.
type RunOptions struct {
	Manager     ManagerOptions
	Controllers ControllerOptions
	Providers   ProviderOptions
	Audit       AuditOptions
	Score       score.Config
	// StatusPage serves the read-only web status page at /status/ beside
	// /metrics (docs/status-page.md).
	StatusPage bool
}

// Run starts the manager with the reconcilers and blocks until ctx ends.
func Run(ctx context.Context, o RunOptions) error {
	log := ctrl.Log.WithName("audit")
	aud, err := openAudit(ctx, o.Audit, log)
	if err != nil {
		return err
	}
	// Closed after the manager has stopped and its reconciles finished,
	// so the last steps' records are flushed.
	defer func() {
		if cerr := aud.close(); cerr != nil {
			log.Error(cerr, "closing the audit log")
		}
	}()
	mgr, err := NewManager(o.Manager)
	if err != nil {
		return err
	}
	if err := mountEndpoints(mgr, aud.reader, o.Audit.Sink == "dynamodb", o.StatusPage); err != nil {
		return err
	}
	if err := addNotary(mgr, aud, o.Audit.SigningKeyDir, o.Controllers.Self.Namespace, log); err != nil {
		return err
	}
	set, err := NewProviders(ctx, mgr, o.Providers)
	if err != nil {
		return err
	}
	o.Controllers.Providers = set
	o.Controllers.Audit, o.Controllers.AuditReader = aud.sink, aud.reader
	if o.Controllers.Scorer, err = score.New(o.Score); err != nil {
		return fmt.Errorf("health score settings: %w", err)
	}
	if err := Setup(mgr, o.Controllers); err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running controller manager: %w", err)
	}
	return nil
}
