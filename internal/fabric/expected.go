package fabric

// efaDevices is the number of EFA devices of the EC2 instance types with
// EFA that the agent runs on: one per EFA interface, at most one per
// network card. It is the maximum: an instance launched with fewer EFA
// interfaces has fewer devices, and then the agent's flag must say so.
//
// Sources, checked 2026-12: AWS, Amazon EC2 User Guide, "Maximize network
// bandwidth on accelerated computing instances with EFA"
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html):
// "P5 and P5e instances support up to 32 network cards"; and the table AWS
// keeps for its own cluster health checks, aws-samples/
// awsome-distributed-training,
// 4.validation_and_observability/2.gpu-cluster-healthcheck/instance-profiles.conf
// (commit 7217859f67bc693c52ff175ccc6082c41dbd7a1b): p4d and p4de 4,
// p5 and p5e 32, p5en 16, p6-b200 8.
var efaDevices = map[string]int{
	"p4d.24xlarge":     4,
	"p4de.24xlarge":    4,
	"p5.48xlarge":      32,
	"p5e.48xlarge":     32,
	"p5en.48xlarge":    16,
	"p6-b200.48xlarge": 8,
}

// ExpectedDevices is how many RDMA devices an EC2 instance type has with
// every EFA interface attached, or 0 when the type is not in the table
// (unknown, not "none expected").
func ExpectedDevices(instanceType string) int {
	return efaDevices[instanceType]
}
