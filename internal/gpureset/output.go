package gpureset

import (
	"strings"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// MaxOutput bounds what is kept of a reset tool's output: it is outside
// input and goes into a Node annotation.
const MaxOutput = 4 << 10

// maxMessage bounds the text a failed reset reports.
const maxMessage = 512

// ParseOutput turns what `nvidia-smi --gpu-reset -i <bus>` printed (failed
// tells whether it exited non-zero) into a failure reason: "" when the GPU
// was reset, else one of v1alpha1.ResetReason*, with the line that says
// why. The messages it knows are nvidia-smi's own (testdata/README.md
// names where each capture comes from); anything else is ResetError with
// the text, and a zero exit without the success line is one too (a
// multi-GPU "could not be reset" list can come with exit 0 on old
// drivers).
func ParseOutput(out string, failed bool) (reason, message string) {
	if len(out) > MaxOutput {
		out = out[:MaxOutput]
	}
	lower := strings.ToLower(out)
	line := firstLine(out)
	switch {
	case strings.Contains(lower, "in use by another client"),
		strings.Contains(lower, "currently in use by another process"),
		strings.Contains(lower, "is currently being used by one or more other processes"):
		return v1alpha1.ResetReasonInUse, pick(out, "in use", line)
	case strings.Contains(lower, "is the primary gpu"), strings.Contains(lower, "primary gpu"):
		return v1alpha1.ResetReasonPrimaryGPU, pick(out, "primary", line)
	case strings.Contains(lower, "no devices were found"),
		strings.Contains(lower, "no gpu found"),
		strings.Contains(lower, "not found"),
		strings.Contains(lower, "is not a valid"),
		strings.Contains(lower, "gpu is lost"):
		return v1alpha1.ResetReasonNotFound, line
	case strings.Contains(lower, "not supported"):
		return v1alpha1.ResetReasonNotSupported, pick(out, "not supported", line)
	case !failed && strings.Contains(lower, "was successfully reset") &&
		!strings.Contains(lower, "could not be reset"):
		return "", ""
	}
	if line == "" {
		line = "the reset tool printed nothing"
		if !failed {
			line = "the reset tool exited 0 without saying the GPU was reset"
		}
	}
	return v1alpha1.ResetReasonError, line
}

// pick is the first line of out that contains key (case-insensitive),
// else def; cleaned and bounded.
func pick(out, key, def string) string {
	for l := range strings.Lines(out) {
		if strings.Contains(strings.ToLower(l), key) {
			return clean(l)
		}
	}
	return def
}

// firstLine is the first non-empty line of out, cleaned and bounded.
func firstLine(out string) string {
	for l := range strings.Lines(out) {
		if s := clean(l); s != "" {
			return s
		}
	}
	return ""
}

func clean(s string) string {
	s = strings.TrimSpace(termsafe.Clean(s))
	if len(s) > maxMessage {
		s = s[:maxMessage]
	}
	return s
}
