package agent

import (
	"fmt"
	"strconv"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
)

// gpuCountLabels are the node labels that say how many GPUs the node's
// hardware has, in the order they are believed: the instance type's count
// as Karpenter or EKS Auto Mode publish it (facts of the instance type,
// fixed at launch), then the GPU Operator's count (what feature discovery
// saw when it last looked). None of them is the nvidia.com/gpu capacity:
// the device plugin lowers that when a GPU dies, and a node that lost a
// GPU must still read as "7 of 8".
var gpuCountLabels = []string{
	v1alpha1.LabelKarpenterInstanceGPUCount,
	v1alpha1.LabelEKSInstanceGPUCount,
	v1alpha1.LabelNvidiaGPUCount,
}

// instanceGPUs is the NVIDIA GPU count of the EC2 instance types gpuheal
// is run on most, for nodes that carry none of gpuCountLabels (managed
// node groups without the GPU Operator). Source: "Amazon EC2 accelerated
// computing instances" specifications,
// https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (P4d, P4de,
// P5, P5e, P5en, P6-B200).
var instanceGPUs = map[string]int{
	"p4d.24xlarge":     8, // A100 40 GB
	"p4de.24xlarge":    8, // A100 80 GB
	"p5.4xlarge":       1, // H100
	"p5.48xlarge":      8, // H100
	"p5e.48xlarge":     8, // H200
	"p5en.48xlarge":    8, // H200
	"p6-b200.48xlarge": 8, // B200
}

// expectedFromNode is how many GPUs the node should have and which key
// said so: the first of gpuCountLabels present, else the instance-type
// table; 0 and "" when nothing is known. A label that is present but not
// a count is an error naming it: guessing past it would hide a broken
// label behind a weaker source.
func expectedFromNode(n *kubecore.Node) (int, string, error) {
	for _, key := range gpuCountLabels {
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		c, err := strconv.Atoi(v)
		if err != nil || c < 0 {
			return 0, key, fmt.Errorf("node %s label %s=%q is not a GPU count", n.Name, key, v)
		}
		return c, key, nil
	}
	if c, ok := instanceGPUs[n.Labels[v1alpha1.LabelInstanceType]]; ok {
		return c, v1alpha1.LabelInstanceType, nil
	}
	return 0, "", nil
}

// knownGPUNode says whether the cluster already knows the node has GPUs:
// a GPU count from expectedFromNode, nvidia.com/gpu capacity, or the GPU
// Operator's gpu.present label. The agent then keeps running when the
// driver cannot be opened, to say so on the Node, rather than exiting as
// on a node without GPUs.
func knownGPUNode(n *kubecore.Node) (bool, string) {
	if c, key, err := expectedFromNode(n); err == nil && c > 0 {
		return true, key
	}
	if q, ok := n.Status.Capacity[v1alpha1.ResourceNvidiaGPU]; ok && q.Sign() > 0 {
		return true, "capacity " + v1alpha1.ResourceNvidiaGPU
	}
	if n.Labels[v1alpha1.LabelNvidiaGPUPresent] == "true" {
		return true, v1alpha1.LabelNvidiaGPUPresent
	}
	return false, ""
}
