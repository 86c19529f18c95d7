//go:build integration

package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAuditDurableByDefault: the default audit store outlives the
// controller's pod (a PersistentVolumeClaim the Deployment mounts, one
// replica, Recreate), and the emptyDir is an explicit choice.
func TestAuditDurableByDefault(t *testing.T) {
	objs := decode(t, render(t))
	pvc := find(t, objs, "PersistentVolumeClaim", "gpuheal-controller-audit")
	if pvc.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Error("the audit PVC is not kept on uninstall")
	}
	d := find(t, objs, "Deployment", "gpuheal-controller")
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	var claim string
	for _, v := range vols {
		if c, ok, _ := unstructured.NestedString(v.(map[string]any), "persistentVolumeClaim", "claimName"); ok {
			claim = c
		}
	}
	if claim != pvc.GetName() {
		t.Errorf("controller volumes %v do not mount the audit PVC", vols)
	}
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 1 {
		t.Errorf("replicas = %d, want 1 with the SQLite volume", n)
	}
	if s, _, _ := unstructured.NestedString(d.Object, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("strategy %q, want Recreate (one pod holds the ReadWriteOnce volume)", s)
	}
	if has(decode(t, render(t, "--set", "controller.audit.sqlite.persistence.enabled=false")), "PersistentVolumeClaim", "gpuheal-controller-audit") {
		t.Error("persistence.enabled=false still renders the PVC")
	}
}

// TestEndpointsSecureByDefault: the controller serves its metrics port
// with TLS and TokenReview/SubjectAccessReview, holds the rights those
// reviews need, the reader ClusterRole names every path it serves, and a
// NetworkPolicy limits who connects; each can be turned off.
func TestEndpointsSecureByDefault(t *testing.T) {
	objs := decode(t, render(t))
	d := find(t, objs, "Deployment", "gpuheal-controller")
	if args := containerArgs(t, d, "controller"); !slices.Contains(args, "--metrics-secure=true") {
		t.Errorf("controller args %v lack --metrics-secure=true", args)
	}
	role := find(t, objs, "ClusterRole", "gpuheal-controller")
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var got []string
	for _, r := range rules {
		res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
		for _, x := range res {
			if x == "tokenreviews" || x == "subjectaccessreviews" {
				got = append(got, x+":"+strings.Join(verbs, ","))
			}
		}
	}
	if diff := cmp.Diff([]string{"tokenreviews:create", "subjectaccessreviews:create"}, got); diff != "" {
		t.Errorf("controller review rights (-want +got):\n%s", diff)
	}
	reader := find(t, objs, "ClusterRole", "gpuheal-metrics-reader")
	rrules, _, _ := unstructured.NestedSlice(reader.Object, "rules")
	urls, _, _ := unstructured.NestedStringSlice(rrules[0].(map[string]any), "nonResourceURLs")
	if diff := cmp.Diff([]string{"/metrics", "/audit/*", "/status", "/status/*"}, urls); diff != "" {
		t.Errorf("metrics-reader nonResourceURLs (-want +got):\n%s", diff)
	}
	for _, name := range []string{"gpuheal-controller", "gpuheal-agent"} {
		find(t, objs, "NetworkPolicy", name)
	}
	extra := decode(t, render(t, "--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring"))
	np := find(t, extra, "NetworkPolicy", "gpuheal-controller")
	from, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	peers, _, _ := unstructured.NestedSlice(from[0].(map[string]any), "from")
	if len(peers) != 2 {
		t.Errorf("controller NetworkPolicy peers %v, want the release namespace and the configured one", peers)
	}

	off := decode(t, render(t, "--set", "controller.metrics.secure=false", "--set", "networkPolicy.enabled=false"))
	if args := containerArgs(t, find(t, off, "Deployment", "gpuheal-controller"), "controller"); !slices.Contains(args, "--metrics-secure=false") {
		t.Errorf("secure=false: controller args %v lack --metrics-secure=false", args)
	}
	if has(off, "NetworkPolicy", "gpuheal-controller") {
		t.Error("networkPolicy.enabled=false still renders the NetworkPolicy")
	}
}

// TestAgentReadinessProbe: the agent's readiness probe asks /readyz, which
// follows the GPUs and the API server, with the threshold from the values.
func TestAgentReadinessProbe(t *testing.T) {
	ds := find(t, decode(t, render(t, "--set", "agent.readyThreshold=5m")), "DaemonSet", "gpuheal-agent")
	c := container(t, ds, "agent")
	path, _, _ := unstructured.NestedString(c, "readinessProbe", "httpGet", "path")
	live, _, _ := unstructured.NestedString(c, "livenessProbe", "httpGet", "path")
	if path != "/readyz" || live != "/healthz" {
		t.Errorf("readiness probe %q, liveness %q; want /readyz and /healthz", path, live)
	}
	if args := containerArgs(t, ds, "agent"); !slices.Contains(args, "--ready-threshold=5m") {
		t.Errorf("agent args %v lack --ready-threshold=5m", args)
	}
}
