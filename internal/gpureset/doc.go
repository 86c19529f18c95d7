// Package gpureset resets one GPU of a node without rebooting it, and
// checks that the reset repaired it: stop gpuheal's own NVML use, refuse
// what the NVSwitch fabric manager does not allow, wait for the GPU's
// processes to go, take persistence mode off, run the reset, put
// persistence mode back, reopen NVML and verify the GPU (same UUID, no
// volatile uncorrected ECC, no reset required, no pending remap, fabric
// state back). Every step is recorded as a v1alpha1.GPUResetStep; a
// failure carries one of the v1alpha1.ResetReason* values, so that the
// controller can escalate to a reboot.
//
// It knows nothing of Kubernetes: the agent (internal/agent/gpureset.go)
// takes the request from the NodeRemediation, journals it and publishes
// the answer. The GPU tool is a Device: nvidia-smi on a real node
// (SMIDevice), the simulated node in the sim backend.
package gpureset
