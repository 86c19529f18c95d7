package aws

import (
	"context"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// Reboot asks EC2 to reboot the node's instance and returns EC2's request id.
//
// EC2 takes no idempotency token for a reboot and keeps no record of one, so
// a repeat for the same token is recognised only within this process. A
// repeat after a controller restart reboots again; that is the gentle rung
// of the ladder and costs a few minutes, never a machine.
func (p *Provider) Reboot(ctx context.Context, node *corev1.Node, token string) (string, error) {
	in, err := instanceOf(node)
	if err != nil {
		return "", err
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("node", node.Name, "instance", in.ID, "region", in.Region)
	key := actionKey("reboot", token, in.ID)
	if id, ok := p.done.get(key); ok {
		log.V(1).Info("Reboot already requested for this incident; not rebooting again", "requestID", id)
		return id, nil
	}
	out, err := p.clients(in.Region).ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{in.ID}})
	if err != nil {
		return "", callError("RebootInstances", node.Name, in, err)
	}
	id, _ := awsmiddleware.GetRequestIDMetadata(out.ResultMetadata)
	p.done.put(key, id)
	log.Info("Requested EC2 reboot", "requestID", id)
	return id, nil
}
