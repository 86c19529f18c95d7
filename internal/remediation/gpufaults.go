package remediation

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
)

// The agent's two reset annotations are outside input: a node's owner can
// write anything into them. They are bounded and checked here before the
// controller evicts a pod or believes an answer.
const (
	// maxGPUFaultsBytes bounds AnnotationGPUFaults: 64 GPUs with their
	// pods fit several times over.
	maxGPUFaultsBytes = 64 << 10
	// maxGPUResetBytes bounds AnnotationGPUReset: a few GPUs and a dozen
	// steps with messages.
	maxGPUResetBytes = 32 << 10
	// maxFaultGPUs and maxFaultPods bound the report's lists.
	maxFaultGPUs = 64
	maxFaultPods = 256
)

// parseGPUFaults reads a node's AnnotationGPUFaults. Every problem is an
// error that says what was wrong and where, so an operator can find the
// agent that wrote it.
func parseGPUFaults(raw string) (*v1alpha1.GPUFaultReport, error) {
	where := "annotation " + v1alpha1.AnnotationGPUFaults
	if len(raw) > maxGPUFaultsBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d allowed", where, len(raw), maxGPUFaultsBytes)
	}
	var rep v1alpha1.GPUFaultReport
	if err := decodeStrict(raw, &rep); err != nil {
		return nil, fmt.Errorf("%s: not a GPU fault report: %w", where, err)
	}
	if len(rep.GPUs) > maxFaultGPUs {
		return nil, fmt.Errorf("%s: %d GPUs, more than the %d allowed", where, len(rep.GPUs), maxFaultGPUs)
	}
	seen := map[int32]bool{}
	for i, g := range rep.GPUs {
		at := fmt.Sprintf("%s: gpus[%d]", where, i)
		switch {
		case g.Index < 0:
			return nil, fmt.Errorf("%s: index %d is negative", at, g.Index)
		case seen[g.Index]:
			return nil, fmt.Errorf("%s: GPU %d listed twice", at, g.Index)
		case len(g.Pods) > maxFaultPods:
			return nil, fmt.Errorf("%s: %d pods, more than the %d allowed", at, len(g.Pods), maxFaultPods)
		case len(g.UUID) > 64 || len(g.BusID) > 32:
			return nil, fmt.Errorf("%s: uuid or busID longer than a GPU's (64 and 32 characters)", at)
		}
		seen[g.Index] = true
		if _, err := finding.ParseAction(g.Action); err != nil {
			return nil, fmt.Errorf("%s: action: %w", at, err)
		}
		switch g.Sharing {
		case v1alpha1.GPUSharingExclusive, v1alpha1.GPUSharingShared, v1alpha1.GPUSharingMIG, v1alpha1.GPUSharingUnknown:
		default:
			return nil, fmt.Errorf("%s: sharing %q is none of Exclusive, Shared, MIG, Unknown", at, g.Sharing)
		}
		for j, p := range g.Pods {
			if ns, name, ok := strings.Cut(p, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				return nil, fmt.Errorf("%s: pods[%d] %q is not namespace/name", at, j, p)
			}
		}
	}
	return &rep, nil
}

// parseGPUReset reads a node's AnnotationGPUReset.
func parseGPUReset(raw string) (*v1alpha1.GPUResetReport, error) {
	where := "annotation " + v1alpha1.AnnotationGPUReset
	if len(raw) > maxGPUResetBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d allowed", where, len(raw), maxGPUResetBytes)
	}
	var rep v1alpha1.GPUResetReport
	if err := decodeStrict(raw, &rep); err != nil {
		return nil, fmt.Errorf("%s: not a GPU reset report: %w", where, err)
	}
	switch rep.Outcome {
	case v1alpha1.GPUResetRunning, v1alpha1.GPUResetSucceeded, v1alpha1.GPUResetFailed:
	default:
		return nil, fmt.Errorf("%s: outcome %q is none of Running, Succeeded, Failed", where, rep.Outcome)
	}
	if rep.RequestID == "" {
		return nil, fmt.Errorf("%s: no requestID", where)
	}
	return &rep, nil
}

// decodeStrict decodes one JSON value with nothing after it. Unknown
// fields are allowed: a newer agent may add some, and an older controller
// must still read what it knows.
func decodeStrict(raw string, v any) error {
	dec := json.NewDecoder(strings.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the JSON value at offset %d", dec.InputOffset())
	}
	return nil
}

// sameGPUs reports whether two lists name the same GPUs: the same
// indexes, and the same UUID and bus ID where the request has them.
func sameGPUs(req, got []v1alpha1.GPURef) bool {
	if len(req) != len(got) {
		return false
	}
	key := func(g v1alpha1.GPURef) int32 { return g.Index }
	a, b := slices.Clone(req), slices.Clone(got)
	slices.SortFunc(a, func(x, y v1alpha1.GPURef) int { return int(key(x) - key(y)) })
	slices.SortFunc(b, func(x, y v1alpha1.GPURef) int { return int(key(x) - key(y)) })
	for i := range a {
		if a[i].Index != b[i].Index ||
			(a[i].UUID != "" && !strings.EqualFold(a[i].UUID, b[i].UUID)) ||
			(a[i].BusID != "" && !strings.EqualFold(a[i].BusID, b[i].BusID)) {
			return false
		}
	}
	return true
}

// sameGPU reports whether a fault names the GPU of a request.
func sameGPU(ref v1alpha1.GPURef, f v1alpha1.GPUFault) bool {
	return sameGPUs([]v1alpha1.GPURef{ref}, []v1alpha1.GPURef{f.GPURef})
}

// gpuNames says "GPU 3 (GPU-…)" for each GPU, for messages.
func gpuNames(gpus []v1alpha1.GPURef) string {
	var out []string
	for _, g := range gpus {
		s := fmt.Sprintf("GPU %d", g.Index)
		if g.UUID != "" {
			s += " (" + g.UUID + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}
