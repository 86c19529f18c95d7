package aws

import (
	"context"
	"fmt"
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// Replace terminates the node's instance through its Auto Scaling group
// without lowering the desired capacity, so the group launches a new
// instance. It returns the Auto Scaling activity id.
//
// Auto Scaling takes no idempotency token either, so Replace looks before it
// acts: an instance the group is already terminating (or has terminated, or
// EC2 has) is not terminated again. That holds across controller restarts,
// which a second replacement must never come from.
func (p *Provider) Replace(ctx context.Context, node *corev1.Node, token string) (string, error) {
	in, err := instanceOf(node)
	if err != nil {
		return "", err
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("node", node.Name, "instance", in.ID, "region", in.Region)
	key := actionKey("replace", token, in.ID)
	if id, ok := p.done.get(key); ok {
		log.V(1).Info("Replacement already requested for this incident; not terminating again", "activityID", id)
		return id, nil
	}

	member, err := p.groupMember(ctx, node.Name, in)
	if err != nil {
		return "", err
	}
	if member == nil {
		// Not (or no longer) in a group. An instance that is already going
		// or gone was most likely terminated by an earlier call whose
		// result we lost; after termination it leaves its group.
		if gone, err := p.goneFromEC2(ctx, node.Name, in); err != nil || gone {
			if gone {
				log.Info("Instance is already terminated; not terminating again")
			}
			return "", err
		}
		return "", fmt.Errorf("replacing node %s: instance %s in %s: %w, so terminating it would bring no replacement; "+
			"use the provider that manages this node (karpenter, clusterapi) instead", node.Name, in.ID, in.Region, ErrNoAutoScalingGroup)
	}
	group := awssdk.ToString(member.AutoScalingGroupName)
	log = log.WithValues("autoScalingGroup", group)
	if terminating(member) {
		log.Info("Auto Scaling group is already terminating the instance; not terminating again", "lifecycleState", awssdk.ToString(member.LifecycleState))
		return "", nil
	}

	out, err := p.clients(in.Region).asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: awssdk.String(in.ID),
		// False is the point: the group keeps its size and so launches a
		// replacement.
		ShouldDecrementDesiredCapacity: awssdk.Bool(false),
	})
	if err != nil {
		// When an attempt's answer was lost and the SDK retried, the retry
		// fails because the instance is already terminating: the action
		// happened. Ask rather than guess.
		if p.terminatingNow(ctx, node.Name, in) {
			log.Info("Terminate call failed but the instance is terminating; counting it as done", "error", err.Error())
			return "", nil
		}
		return "", callError("TerminateInstanceInAutoScalingGroup", node.Name, in, err)
	}
	id := ""
	if out.Activity != nil {
		id = awssdk.ToString(out.Activity.ActivityId)
	}
	if id == "" {
		id, _ = awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	}
	p.done.put(key, id)
	log.Info("Terminated instance in its Auto Scaling group; the group will launch a replacement", "activityID", id)
	return id, nil
}

// groupMember returns the instance's Auto Scaling membership, nil when it is
// in no group.
func (p *Provider) groupMember(ctx context.Context, nodeName string, in instance) (*asgtypes.AutoScalingInstanceDetails, error) {
	out, err := p.clients(in.Region).asg.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{
		InstanceIds: []string{in.ID},
	})
	if err != nil {
		return nil, callError("DescribeAutoScalingInstances", nodeName, in, err)
	}
	for i := range out.AutoScalingInstances {
		if awssdk.ToString(out.AutoScalingInstances[i].InstanceId) == in.ID {
			return &out.AutoScalingInstances[i], nil
		}
	}
	return nil, nil
}

// terminatingNow looks again after a failed terminate call; any error in
// looking counts as "no", so the caller reports the call's own error.
func (p *Provider) terminatingNow(ctx context.Context, nodeName string, in instance) bool {
	m, err := p.groupMember(ctx, nodeName, in)
	if err != nil {
		return false
	}
	if m != nil {
		return terminating(m)
	}
	gone, err := p.goneFromEC2(ctx, nodeName, in)
	return err == nil && gone
}

// terminating covers Terminating, Terminating:Wait, Terminating:Proceed,
// Terminating:Retained and Terminated. Warmed:Terminating is a warm-pool
// instance, which no node runs on.
func terminating(m *asgtypes.AutoScalingInstanceDetails) bool {
	return strings.HasPrefix(awssdk.ToString(m.LifecycleState), "Terminat")
}

// goneFromEC2 says whether EC2 is terminating or has terminated the
// instance. Stopping is not gone: a stopped instance can start again.
func (p *Provider) goneFromEC2(ctx context.Context, nodeName string, in instance) (bool, error) {
	inst, err := p.describe(ctx, nodeName, in)
	if err != nil {
		return false, err
	}
	if inst == nil || inst.State == nil {
		return inst == nil, nil
	}
	switch inst.State.Name {
	case ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
		return true, nil
	}
	return false, nil
}
