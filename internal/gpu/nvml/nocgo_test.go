//go:build !cgo

package nvml

import (
	"strings"
	"testing"
)

func TestNewWithoutCgo(t *testing.T) {
	_, err := New(Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "no NVIDIA GPU found: ") {
		t.Fatalf("New() error = %v, want one starting %q", err, "no NVIDIA GPU found: ")
	}
}
