//go:build integration

package chart

import (
	"strings"
	"testing"
)

// TestImageDigest: a digest value makes every pod run repository@digest
// (what a release's chart carries); without one the tag is used; a
// malformed digest is refused.
func TestImageDigest(t *testing.T) {
	const (
		agentDigest      = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
		controllerDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	)
	pods := func(args ...string) map[string]string {
		out := map[string]string{}
		for _, o := range decode(t, render(t, args...)) {
			switch o.GetKind() {
			case "DaemonSet", "Deployment", "Job":
				for _, name := range []string{"agent", "controller", "release"} {
					if c := findContainer(o.Object, name); c != nil {
						out[o.GetKind()+"/"+o.GetName()] = c["image"].(string)
					}
				}
			}
		}
		return out
	}
	tagged := pods("--set", "image.tag=1.2.3")
	digested := pods("--set", "image.tag=1.2.3", "--set", "agent.image.digest="+agentDigest, "--set", "controller.image.digest="+controllerDigest)
	if len(tagged) < 3 || len(tagged) != len(digested) {
		t.Fatalf("workloads with images: %v and %v, want the agent, the controller and the uninstall Job", tagged, digested)
	}
	for w, img := range tagged {
		if !strings.HasSuffix(img, ":1.2.3") || strings.Contains(img, "@") {
			t.Errorf("%s without digest: image %q, want repository:1.2.3", w, img)
		}
		want := strings.TrimSuffix(img, ":1.2.3") + "@" + controllerDigest
		if strings.Contains(img, "gpuheal-agent") {
			want = strings.TrimSuffix(img, ":1.2.3") + "@" + agentDigest
		}
		if digested[w] != want {
			t.Errorf("%s with digest: image %q, want %q", w, digested[w], want)
		}
	}
	args := []string{"template", "gpuheal", chartDir(t), "--namespace", namespace, "--set", "controller.image.digest=sha256:abc"}
	if _, err := runHelm(t, args...); err == nil || !strings.Contains(err.Error(), "'/controller/image/digest': 'sha256:abc' does not match") {
		t.Errorf("malformed digest: %v, want an error naming it", err)
	}
}

// findContainer is the container named name of a workload or Job, or nil.
func findContainer(obj map[string]any, name string) map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	for spec != nil {
		if tmpl, ok := spec["template"].(map[string]any); ok {
			spec, _ = tmpl["spec"].(map[string]any)
			continue
		}
		if jt, ok := spec["jobTemplate"].(map[string]any); ok {
			spec, _ = jt["spec"].(map[string]any)
			continue
		}
		break
	}
	if spec == nil {
		return nil
	}
	cs, _ := spec["containers"].([]any)
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}
