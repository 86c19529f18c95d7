// Package release checks the supply-chain files: the release workflow does
// what docs/images.md says, and the Dockerfiles' base images are pinned.
package release

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

type workflow struct {
	On map[string]any `json:"on"`
	// YAML 1.1, which sigs.k8s.io/yaml reads, takes the key on for true.
	OnAsTrue    map[string]any `json:"true"`
	Permissions map[string]string
	Jobs        map[string]job
}

type job struct {
	Needs       any               `json:"needs"`
	Permissions map[string]string `json:"permissions"`
	Strategy    struct {
		Matrix map[string][]string `json:"matrix"`
	} `json:"strategy"`
	Steps []step `json:"steps"`
}

type step struct {
	Name string            `json:"name"`
	Uses string            `json:"uses"`
	Run  string            `json:"run"`
	With map[string]any    `json:"with"`
	Env  map[string]string `json:"env"`
}

func load(t *testing.T) workflow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testcluster.RepoRoot(t), ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("release.yml: %v", err)
	}
	return w
}

// uses finds the first step whose action starts with prefix.
func (j job) uses(prefix string) *step {
	for i := range j.Steps {
		if strings.HasPrefix(j.Steps[i].Uses, prefix) {
			return &j.Steps[i]
		}
	}
	return nil
}

func (j job) runs(sub string) bool {
	return slices.ContainsFunc(j.Steps, func(s step) bool { return strings.Contains(s.Run, sub) })
}

func TestReleaseWorkflow(t *testing.T) {
	w := load(t)
	if _, ok := w.On["push"]; !ok && w.OnAsTrue["push"] == nil {
		t.Errorf("on: %v, want a push of tags", w.On)
	}
	verify, images, chart := w.Jobs["verify"], w.Jobs["images"], w.Jobs["chart"]
	if !verify.runs("govulncheck") {
		t.Error("verify job runs no govulncheck")
	}
	if images.Needs != "verify" {
		t.Errorf("images needs %v, want verify (no image without govulncheck)", images.Needs)
	}
	if diff := strings.Join(images.Strategy.Matrix["image"], ","); diff != "gpuheal-agent,gpuheal-controller,gpuheal" {
		t.Errorf("images matrix %s, want the agent, controller and CLI", diff)
	}
	if images.Permissions["id-token"] != "write" || images.Permissions["packages"] != "write" {
		t.Errorf("images permissions %v, want id-token: write (keyless signing) and packages: write", images.Permissions)
	}
	build := images.uses("docker/build-push-action@")
	if build == nil {
		t.Fatal("images job has no docker/build-push-action step")
	}
	if p := build.With["platforms"]; p != "linux/amd64,linux/arm64" {
		t.Errorf("platforms %v, want linux/amd64,linux/arm64", p)
	}
	if build.With["sbom"] != true || !strings.HasPrefix(build.With["provenance"].(string), "mode=") {
		t.Errorf("build sbom %v provenance %v, want both attached", build.With["sbom"], build.With["provenance"])
	}
	if f := build.With["file"]; f != "build/${{ matrix.image }}.Dockerfile" {
		t.Errorf("build file %v, want the Dockerfiles in build/", f)
	}
	if images.uses("sigstore/cosign-installer@") == nil || !images.runs("cosign sign --yes") || !images.runs("@${{ steps.build.outputs.digest }}") &&
		!slices.ContainsFunc(images.Steps, func(s step) bool { return strings.Contains(s.Env["IMAGE"], "@${{ steps.build.outputs.digest }}") }) {
		t.Error("images are not signed by digest with cosign")
	}
	if images.uses("anchore/sbom-action@") == nil || !images.runs("cosign attest") {
		t.Error("no SBOM file attested to the image")
	}
	if chart.Needs != "images" || chart.uses("sigstore/cosign-installer@") == nil {
		t.Errorf("chart job needs %v, want images, and signs with cosign", chart.Needs)
	}
	for _, want := range []string{".agent.image.digest = strenv(AGENT)", ".controller.image.digest = strenv(CONTROLLER)", "helm package"} {
		if !chart.runs(want) {
			t.Errorf("chart job does not run %q", want)
		}
	}
}

// TestBaseImagesPinned: every base image default in build/ is a digest.
func TestBaseImagesPinned(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testcluster.RepoRoot(t), "build", "*.Dockerfile"))
	if err != nil || len(files) != 3 {
		t.Fatalf("Dockerfiles: %v %v", files, err)
	}
	arg := regexp.MustCompile(`(?m)^ARG (\w+_IMAGE)=(\S+)$`)
	pinned := regexp.MustCompile(`^[a-z0-9./-]+(:[\w.-]+)?@sha256:[0-9a-f]{64}$`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		args := arg.FindAllStringSubmatch(string(b), -1)
		if len(args) != 2 {
			t.Errorf("%s: base image args %v, want BUILDER_IMAGE and RUNTIME_IMAGE", filepath.Base(f), args)
		}
		for _, a := range args {
			if !pinned.MatchString(a[2]) {
				t.Errorf("%s: %s=%s is not pinned by digest", filepath.Base(f), a[1], a[2])
			}
		}
		for _, from := range regexp.MustCompile(`(?m)^FROM (?:--platform=\S+ )?(\S+)`).FindAllStringSubmatch(string(b), -1) {
			if !strings.HasPrefix(from[1], "$") {
				t.Errorf("%s: FROM %s names an image directly instead of a pinned ARG", filepath.Base(f), from[1])
			}
		}
	}
}
