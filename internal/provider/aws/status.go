package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/internal/provider"
)

// Status reports the EC2 state of the node's instance. An instance EC2 no
// longer knows is Gone: EC2 forgets terminated instances after about an hour.
func (p *Provider) Status(ctx context.Context, node *corev1.Node) (provider.InstanceStatus, error) {
	in, err := instanceOf(node)
	if err != nil {
		return provider.InstanceStatus{}, err
	}
	inst, err := p.describe(ctx, node.Name, in)
	if err != nil {
		return provider.InstanceStatus{}, err
	}
	if inst == nil {
		return provider.InstanceStatus{State: provider.StateGone, ID: in.ID, Detail: "EC2 does not know the instance any more"}, nil
	}
	name := types.InstanceStateName("")
	if inst.State != nil {
		name = inst.State.Name
	}
	detail := fmt.Sprintf("EC2 state %s", name)
	if inst.StateReason != nil && inst.StateReason.Message != nil {
		detail += ": " + *inst.StateReason.Message
	}
	return provider.InstanceStatus{State: stateOf(name), ID: in.ID, Detail: detail}, nil
}

// stateOf maps EC2 states. Rebooting is not an EC2 state: a rebooting
// instance stays running. Stopped is Unknown: the machine is neither serving
// nor gone, and only a person or the Auto Scaling health check moves it on.
func stateOf(name types.InstanceStateName) provider.State {
	switch name {
	case types.InstanceStateNamePending, types.InstanceStateNameRunning:
		return provider.StateRunning
	case types.InstanceStateNameStopping, types.InstanceStateNameShuttingDown:
		return provider.StateTerminating
	case types.InstanceStateNameTerminated:
		return provider.StateGone
	}
	return provider.StateUnknown
}

// describe returns the instance, or nil when EC2 does not know it.
func (p *Provider) describe(ctx context.Context, nodeName string, in instance) (*types.Instance, error) {
	out, err := p.clients(in.Region).ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{in.ID}})
	if err != nil {
		if errorCode(err) == codeInstanceNotFound {
			return nil, nil
		}
		return nil, callError("DescribeInstances", nodeName, in, err)
	}
	for _, r := range out.Reservations {
		for i := range r.Instances {
			if id := r.Instances[i].InstanceId; id != nil && *id == in.ID {
				return &r.Instances[i], nil
			}
		}
	}
	return nil, nil
}
