package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// EC2's answers to a dry run: the caller may do it, or may not.
const (
	codeDryRunOperation       = "DryRunOperation"
	codeUnauthorizedOperation = "UnauthorizedOperation"
)

// Bounds of one preflight: nodes tried for the reboot dry run (a node may
// be gone since the cache saw it), and instances asked about in the one
// DescribeAutoScalingInstances call (its page size).
const (
	maxDryRunTries = 3
	maxGroupCheck  = 50
)

// defaultSTSRegion is asked when no node tells the region.
const defaultSTSRegion = "us-east-1"

// Preflight proves what Reboot and Replace need: STS GetCallerIdentity
// (who we are; logged), EC2 RebootInstances with DryRun on one of the
// nodes, and Auto Scaling DescribeAutoScalingInstances on up to 50 of them,
// which must all be in a group (else a replace brings no successor).
func (p *Provider) Preflight(ctx context.Context, nodes []*corev1.Node) (string, error) {
	return p.preflight(ctx, nodes, true)
}

// PreflightReboot is Preflight without the Auto Scaling check, for nodes
// another provider replaces (Karpenter's, see provider.Split).
func (p *Provider) PreflightReboot(ctx context.Context, nodes []*corev1.Node) (string, error) {
	return p.preflight(ctx, nodes, false)
}

func (p *Provider) preflight(ctx context.Context, nodes []*corev1.Node, replace bool) (string, error) {
	var ins []instance
	var named []*corev1.Node
	var bad []string
	for _, n := range nodes {
		in, err := instanceOf(n)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		ins, named = append(ins, in), append(named, n)
	}
	// A node writes its own providerID when it registers, so a malformed
	// one is that node's problem (its incident fails on it): it must not
	// make the policy's other nodes wait. Only with no readable node left
	// does the preflight fail.
	if len(bad) > 0 && len(ins) == 0 {
		return "", &provider.PreflightError{Reason: v1alpha1.ReasonPreflightFailed,
			Err: fmt.Errorf("provider aws: none of the %d nodes can be acted on: %s", len(nodes), strings.Join(first(bad, 3), "; "))}
	}
	region := p.cfg.Region
	if len(ins) > 0 {
		region = ins[0].Region
	}
	if region == "" {
		region = defaultSTSRegion
	}
	arn, err := p.whoAmI(ctx, region)
	if err != nil {
		return "", err
	}
	logr.FromContextOrDiscard(ctx).Info("AWS identity of the aws provider", "arn", arn, "region", region)
	parts := []string{"acting as " + arn}
	if len(ins) == 0 {
		return strings.Join(append(parts, "no node to try RebootInstances on yet"), "; "), nil
	}
	msg, err := p.dryRunReboot(ctx, arn, named, ins)
	if err != nil {
		return "", err
	}
	parts = append(parts, msg)
	if replace {
		msg, err := p.checkGroups(ctx, arn, named, ins)
		if err != nil {
			return "", err
		}
		parts = append(parts, msg)
	}
	if len(bad) > 0 {
		parts = append(parts, fmt.Sprintf("%d nodes skipped, their incidents will fail: %s", len(bad), strings.Join(first(bad, 3), "; ")))
	}
	return strings.Join(parts, "; "), nil
}

// whoAmI returns the ARN the provider acts as. GetCallerIdentity needs no
// IAM permission, so any failure means there is no usable identity.
func (p *Provider) whoAmI(ctx context.Context, region string) (string, error) {
	out, err := p.clients(region).sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", &provider.PreflightError{Reason: v1alpha1.ReasonCredentialsUnavailable,
			Err: fmt.Errorf("provider aws: sts:GetCallerIdentity in %s failed (no usable AWS credentials: check IRSA or Pod Identity on the controller's service account): %s: %w",
				region, codeOr(err), err)}
	}
	return awssdk.ToString(out.Arn), nil
}

// dryRunReboot asks EC2 whether we may reboot a node's instance, trying
// the next node when one is gone.
func (p *Provider) dryRunReboot(ctx context.Context, arn string, nodes []*corev1.Node, ins []instance) (string, error) {
	var err error
	for i := 0; i < len(ins) && i < maxDryRunTries; i++ {
		in, node := ins[i], nodes[i]
		_, err = p.clients(in.Region).ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{in.ID}, DryRun: awssdk.Bool(true)})
		switch code := errorCode(err); {
		case code == codeDryRunOperation:
			return fmt.Sprintf("ec2:RebootInstances allowed (dry run on %s of node %s)", in.ID, node.Name), nil
		case err == nil:
			// A dry run never succeeds; EC2 answering as if it rebooted
			// would be a bug there. It was allowed, either way.
			return fmt.Sprintf("ec2:RebootInstances allowed (node %s)", node.Name), nil
		case code == codeUnauthorizedOperation:
			return "", &provider.PreflightError{Reason: v1alpha1.ReasonPermissionDenied,
				Err: fmt.Errorf("provider aws: %s may not ec2:RebootInstances (dry run on %s of node %s in %s answered %s): grant it in the role's IAM policy (docs/aws.md)",
					arn, in.ID, node.Name, in.Region, code)}
		case code == codeInstanceNotFound:
			continue
		default:
			return "", &provider.PreflightError{Reason: v1alpha1.ReasonPreflightFailed,
				Err: fmt.Errorf("provider aws: %w", callError("RebootInstances (dry run)", node.Name, in, err))}
		}
	}
	return "", &provider.PreflightError{Reason: v1alpha1.ReasonPreflightFailed,
		Err: fmt.Errorf("provider aws: no instance to try ec2:RebootInstances on: %w", err)}
}

// checkGroups asks Auto Scaling which group each of up to 50 instances of
// the first node's region is in; one in none cannot be replaced by aws.
func (p *Provider) checkGroups(ctx context.Context, arn string, nodes []*corev1.Node, ins []instance) (string, error) {
	region := ins[0].Region
	var ids []string
	byID := map[string]string{}
	for i, in := range ins {
		if in.Region == region && len(ids) < maxGroupCheck {
			ids = append(ids, in.ID)
			byID[in.ID] = nodes[i].Name
		}
	}
	out, err := p.clients(region).asg.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: ids})
	if err != nil {
		reason := v1alpha1.ReasonPreflightFailed
		if code := errorCode(err); code == "AccessDenied" || code == "AccessDeniedException" || code == codeUnauthorizedOperation {
			reason = v1alpha1.ReasonPermissionDenied
		}
		return "", &provider.PreflightError{Reason: reason,
			Err: fmt.Errorf("provider aws: %s may not autoscaling:DescribeAutoScalingInstances in %s (%s): %w", arn, region, codeOr(err), err)}
	}
	for _, m := range out.AutoScalingInstances {
		delete(byID, awssdk.ToString(m.InstanceId))
	}
	if len(byID) > 0 {
		var none []string
		for _, id := range ids {
			if n, ok := byID[id]; ok {
				none = append(none, n+" ("+id+")")
			}
		}
		return "", &provider.PreflightError{Reason: v1alpha1.ReasonNotInAutoScalingGroup,
			Err: fmt.Errorf("provider aws: %d of %d nodes checked in %s are in no Auto Scaling group, so a replace would terminate them with no successor: %s; "+
				"run them in a node group, or name the provider that launched them (nodes Karpenter launched are replaced through their NodeClaim)",
				len(none), len(ids), region, strings.Join(first(none, 5), ", "))}
	}
	return fmt.Sprintf("autoscaling:DescribeAutoScalingInstances allowed; %d of %d nodes checked are in an Auto Scaling group", len(ids), len(ids)), nil
}

// codeOr is AWS's error code, or a word saying none came back.
func codeOr(err error) string {
	if c := errorCode(err); c != "" {
		return c
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return fmt.Sprintf("HTTP %d", re.HTTPStatusCode())
	}
	return "no answer from AWS"
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}
