package agent

import (
	"errors"
	"fmt"
	"strconv"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
)

// gpuCountLabels are the node labels that say how many GPUs the node's
// hardware has. Karpenter's and EKS Auto Mode's instance-gpu-count
// describe the instance type (fixed at launch, whatever was found);
// the GPU Operator's nvidia.com/gpu.count is what feature discovery
// counted when it last looked, and it counts again after a reboot: a
// p5.48xlarge whose GPU died reads 7 there. None of them is the
// nvidia.com/gpu capacity, which the device plugin lowers when a GPU
// dies. expectedFromNode takes the largest of all of them and the
// instance-type table, so no source that lost a GPU hides it: a node
// that lost a GPU must still read as "7 of 8".
var gpuCountLabels = []string{
	v1alpha1.LabelKarpenterInstanceGPUCount,
	v1alpha1.LabelEKSInstanceGPUCount,
	v1alpha1.LabelNvidiaGPUCount,
}

// instanceGPUs is the NVIDIA GPU count of the EC2 instance types the
// chart's default node affinity schedules on (values.yaml
// gpuNodeAffinity; TestInstanceGPUsMatchChartAffinity keeps the two in
// step), for nodes whose labels say less or nothing (managed node
// groups without the GPU Operator, or GFD counting after a GPU died).
// Source: AWS, "Amazon EC2 accelerated computing instances"
// specifications, https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html
// (P4d, P4de, P5, P5e, P5en, P6-B200, P6-B300, P6e-GB200, G5, G6, G6e),
// and the GPU table of AWS Batch's "Run a GPU job",
// https://docs.aws.amazon.com/batch/latest/userguide/gpu-jobs.html.
var instanceGPUs = map[string]int{
	"p4d.24xlarge":       8, // A100 40 GB
	"p4de.24xlarge":      8, // A100 80 GB
	"p5.4xlarge":         1, // H100
	"p5.48xlarge":        8, // H100
	"p5e.48xlarge":       8, // H200
	"p5en.48xlarge":      8, // H200
	"p6-b200.48xlarge":   8, // B200
	"p6-b300.48xlarge":   8, // B300 (Blackwell Ultra)
	"p6e-gb200.36xlarge": 4, // GB200 superchips: 4 B200 GPUs per instance, 18 per UltraServer
	"g5.xlarge":          1, // A10G
	"g5.2xlarge":         1,
	"g5.4xlarge":         1,
	"g5.8xlarge":         1,
	"g5.12xlarge":        4,
	"g5.16xlarge":        1,
	"g5.24xlarge":        4,
	"g5.48xlarge":        8,
	"g6.xlarge":          1, // L4
	"g6.2xlarge":         1,
	"g6.4xlarge":         1,
	"g6.8xlarge":         1,
	"g6.12xlarge":        4,
	"g6.16xlarge":        1,
	"g6.24xlarge":        4,
	"g6.48xlarge":        8,
	"g6e.xlarge":         1, // L40S
	"g6e.2xlarge":        1,
	"g6e.4xlarge":        1,
	"g6e.8xlarge":        1,
	"g6e.12xlarge":       4,
	"g6e.16xlarge":       1,
	"g6e.24xlarge":       4,
	"g6e.48xlarge":       8,
}

// expectedFromNode is how many GPUs the node should have and which key
// said so: the largest of gpuCountLabels and the instance-type table
// (on a tie the instance type's facts name it: Karpenter, EKS, the
// table, then GFD); 0 and "" when nothing is known. A label that is
// present but not a count is an error naming it, returned beside the
// count of the others: the label is broken and says so, but it must not
// switch off the check the other sources still make.
func expectedFromNode(n *kubecore.Node) (int, string, error) {
	best, bestKey := 0, ""
	consider := func(c int, key string) {
		if c > best {
			best, bestKey = c, key
		}
	}
	var errs []error
	counts := map[string]int{}
	for _, key := range gpuCountLabels {
		v, ok := n.Labels[key]
		if !ok {
			continue
		}
		c, err := strconv.Atoi(v)
		if err != nil || c < 0 {
			errs = append(errs, fmt.Errorf("node %s label %s=%q is not a GPU count", n.Name, key, v))
			continue
		}
		counts[key] = c
	}
	consider(counts[v1alpha1.LabelKarpenterInstanceGPUCount], v1alpha1.LabelKarpenterInstanceGPUCount)
	consider(counts[v1alpha1.LabelEKSInstanceGPUCount], v1alpha1.LabelEKSInstanceGPUCount)
	consider(instanceGPUs[n.Labels[v1alpha1.LabelInstanceType]], v1alpha1.LabelInstanceType)
	consider(counts[v1alpha1.LabelNvidiaGPUCount], v1alpha1.LabelNvidiaGPUCount)
	return best, bestKey, errors.Join(errs...)
}

// knownGPUNode says whether the cluster already knows the node has GPUs:
// a GPU count from expectedFromNode, nvidia.com/gpu capacity, or the GPU
// Operator's gpu.present label. The agent then keeps running when the
// driver cannot be opened, to say so on the Node, rather than exiting as
// on a node without GPUs.
func knownGPUNode(n *kubecore.Node) (bool, string) {
	if c, key, _ := expectedFromNode(n); c > 0 {
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
