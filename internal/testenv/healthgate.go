package testenv

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// NCCLFloorH100 is the all-reduce bus bandwidth an H100 node must reach
// in the demo's and the soak's health gate: NVSentinel's gate figure. A
// healthy simulated H100 node reaches about 385 GB/s; one with a latent
// NCCL fault about 230.
const NCCLFloorH100 = 350

// HealthGate is the demo's and the soak's health gate: the agent's own
// checks, then an NCCL all-reduce (the sim fleet answers its Job).
func HealthGate() *v1alpha1.ValidationSpec {
	timeout := &metav1.Duration{Duration: 10 * time.Minute}
	return &v1alpha1.ValidationSpec{Checks: []v1alpha1.ValidationCheck{
		{Name: "agent", Kind: v1alpha1.CheckAgent, Timeout: timeout},
		{Name: "nccl", Kind: v1alpha1.CheckNCCL, Timeout: timeout,
			Floors: []v1alpha1.BandwidthFloor{{Product: "H100", MinGBps: NCCLFloorH100}}},
	}}
}
