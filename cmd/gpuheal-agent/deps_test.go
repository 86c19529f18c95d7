package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoTypedCoreAPI keeps the agent off k8s.io/api: the typed core/v1
// objects and their generated code cost the agent binary size and RSS it
// does not need (it writes its Node through internal/agent/kubecore;
// docs/benchmarks.md, "agent binary"). api/v1alpha1, which the agent imports
// for the wire contract, must stay free of them too.
func TestLinksNoTypedCoreAPI(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the agent's packages: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "k8s.io/api/") {
			t.Errorf("gpuheal-agent links %s; find the import with `go list -deps -json ./cmd/gpuheal-agent`", p)
		}
	}
}
