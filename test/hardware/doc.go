// Package hardware checks the GPU backends against a real NVIDIA GPU. Its
// tests are built only with -tags gpu (hack/validate-gpu.sh), since CI
// machines have no GPU: NVML and nvidia-smi must agree with each other on
// identity, memory, driver and error counters.
package hardware
