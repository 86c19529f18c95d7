package provider

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// splitSep joins the names of a Split's two providers: "aws+karpenter".
const splitSep = "+"

// Split reboots a node through one provider and replaces it (and reports
// its machine) through another: a node Karpenter launched on EC2 reboots
// through EC2 and is replaced by deleting its NodeClaim, so that Karpenter,
// which owns the instance, launches the successor.
type Split struct {
	Rebooter, Replacer Provider
}

var _ Provider = Split{}

// RebootPreflighter is implemented by providers whose preflight can be
// limited to what a reboot needs (aws: no Auto Scaling group check).
type RebootPreflighter interface {
	PreflightReboot(ctx context.Context, nodes []*corev1.Node) (string, error)
}

// Name is "reboot+replace", e.g. "aws+karpenter"; Set.For accepts it.
func (s Split) Name() string { return s.Rebooter.Name() + splitSep + s.Replacer.Name() }

// Reboot goes to the rebooter.
func (s Split) Reboot(ctx context.Context, node *corev1.Node, token string) (string, error) {
	return s.Rebooter.Reboot(ctx, node, token)
}

// Replace goes to the replacer.
func (s Split) Replace(ctx context.Context, node *corev1.Node, token string) (string, error) {
	return s.Replacer.Replace(ctx, node, token)
}

// Status comes from the replacer, which owns the machine's lifecycle.
func (s Split) Status(ctx context.Context, node *corev1.Node) (InstanceStatus, error) {
	return s.Replacer.Status(ctx, node)
}

// Preflight runs the rebooter's reboot checks and the replacer's checks;
// both must pass. The first failure's reason is kept.
func (s Split) Preflight(ctx context.Context, nodes []*corev1.Node) (string, error) {
	var rbMsg string
	var rbErr error
	if rp, ok := s.Rebooter.(RebootPreflighter); ok {
		rbMsg, rbErr = rp.PreflightReboot(ctx, nodes)
	} else {
		rbMsg, rbErr = s.Rebooter.Preflight(ctx, nodes)
	}
	rpMsg, rpErr := s.Replacer.Preflight(ctx, nodes)
	var errs []error
	for _, e := range []error{rbErr, rpErr} {
		if e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return "", &PreflightError{Reason: ReasonOf(errs[0]), Err: errors.Join(errs...)}
	}
	return fmt.Sprintf("reboot (%s): %s; replace (%s): %s", s.Rebooter.Name(), rbMsg, s.Replacer.Name(), rpMsg), nil
}
