//go:build integration

package chart

import (
	"slices"
	"strings"
	"testing"
)

// TestPreflightValues: the preflight's interval and STS endpoint reach the
// controller, the endpoint only when set.
func TestPreflightValues(t *testing.T) {
	d := find(t, decode(t, render(t)), "Deployment", "gpuheal-controller")
	args := containerArgs(t, d, "controller")
	if !slices.Contains(args, "--preflight-interval=5m") {
		t.Errorf("default controller args %v lack --preflight-interval=5m", args)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--aws-sts-endpoint") {
			t.Errorf("STS endpoint %q rendered without being set", a)
		}
	}
	d = find(t, decode(t, render(t, "--set", "controller.preflightInterval=90s", "--set", "controller.aws.stsEndpoint=https://sts.vpce.example")), "Deployment", "gpuheal-controller")
	args = containerArgs(t, d, "controller")
	for _, want := range []string{"--preflight-interval=90s", "--aws-sts-endpoint=https://sts.vpce.example"} {
		if !slices.Contains(args, want) {
			t.Errorf("controller args %v lack %s", args, want)
		}
	}
}
