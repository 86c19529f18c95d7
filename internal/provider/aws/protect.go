package aws

import (
	"context"
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// SetScaleInProtection sets the Auto Scaling scale-in protection of the
// node's instance: when its group shrinks, Auto Scaling terminates only
// unprotected instances, so protecting the trusted (gold) nodes makes a
// scale-in take the least trusted ones. Replace is not affected: a
// protected instance can still be terminated on purpose.
//
// SetInstanceProtection wants the group's name, which comes from
// DescribeAutoScalingInstances once per instance and is then remembered:
// instances do not change groups in normal life, and the controller calls
// this whenever a node's tier changes. That first look also shows the
// protection the instance has, and one that already has the wanted
// protection is left alone. A failed call forgets the group, so that an
// instance that was detached or moved is looked up afresh next time.
//
// An instance in no group gives ErrNoAutoScalingGroup
// (provider.ErrUnsupported): there is no scale-in to protect it from.
func (p *Provider) SetScaleInProtection(ctx context.Context, node *corev1.Node, protected bool) error {
	in, err := instanceOf(node)
	if err != nil {
		return err
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("node", node.Name, "instance", in.ID, "region", in.Region, "protected", protected)
	key := in.Region + "/" + in.ID
	group, known := p.groups.get(key)
	if !known {
		member, err := p.groupMember(ctx, node.Name, in)
		if err != nil {
			return err
		}
		if member == nil {
			return fmt.Errorf("setting scale-in protection of node %s: instance %s in %s: %w",
				node.Name, in.ID, in.Region, ErrNoAutoScalingGroup)
		}
		group = awssdk.ToString(member.AutoScalingGroupName)
		p.groups.put(key, group)
		if awssdk.ToBool(member.ProtectedFromScaleIn) == protected {
			log.V(1).Info("Instance already has this scale-in protection", "autoScalingGroup", group)
			return nil
		}
	}
	log = log.WithValues("autoScalingGroup", group)
	_, err = p.clients(in.Region).asg.SetInstanceProtection(ctx, &autoscaling.SetInstanceProtectionInput{
		AutoScalingGroupName: awssdk.String(group),
		InstanceIds:          []string{in.ID},
		ProtectedFromScaleIn: awssdk.Bool(protected),
	})
	if err != nil {
		p.groups.forget(key)
		return callError("SetInstanceProtection", node.Name, in, err)
	}
	log.Info("Set scale-in protection of instance")
	return nil
}
