// Package podresources reads which pods hold which GPUs from the kubelet's
// PodResources API (k8s.io/kubelet/pkg/apis/podresources/v1, served on the
// node's pod-resources socket), so that a faulty GPU costs only the pods
// that use it (docs/remediation.md, "Partial drain").
//
// The device IDs are the NVIDIA device plugin's: GPU UUIDs (its default
// DEVICE_ID_STRATEGY=uuid) or indices (strategy index), with "::<n>"
// appended for the replicas of time-slicing and MPS, and MIG devices as
// MIG UUIDs or "<gpu>:<mig>" indices. Whatever cannot be tied to one GPU
// makes the answer Unknown, never a guess: an Unknown GPU costs a whole-node
// drain, a wrong guess would leave a pod on a GPU being reset.
package podresources
