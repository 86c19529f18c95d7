// Package tieraffinitytest reads the example pods of docs/health-score.md
// ("Using the tier in scheduling"), so that tests hold the page to
// tieraffinity and run exactly those pods on the real scheduler.
package tieraffinitytest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The pods of the page, by name.
const (
	// GoldOrSilverPod has the required "critical jobs only on gold/silver"
	// affinity.
	GoldOrSilverPod = "training-critical"
	// PreferHealthierPod has the "prefer healthier nodes" affinity.
	PreferHealthierPod = "training"
)

// DocFile is the page, relative to the repository root.
const DocFile = "docs/health-score.md"

// DocPods returns every Pod in a ```yaml block of the page under root, by
// name. A Pod block with a field a Pod lacks, or without a name, is an
// error: the page must not show YAML the API server would not take.
// Blocks of other kinds (the lemon rule's RemediationPolicy) are for
// DocBlocks' other readers.
func DocPods(root string) (map[string]*corev1.Pod, error) {
	path := filepath.Join(root, DocFile)
	blocks, err := DocBlocks(root)
	if err != nil {
		return nil, err
	}
	pods := map[string]*corev1.Pod{}
	for i, block := range blocks {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(block, &meta); err != nil {
			return nil, fmt.Errorf("%s: yaml block %d: %w", path, i+1, err)
		}
		if meta.Kind != "Pod" {
			continue
		}
		var p corev1.Pod
		if err := yaml.UnmarshalStrict(block, &p); err != nil {
			return nil, fmt.Errorf("%s: yaml block %d: %w", path, i+1, err)
		}
		if p.Kind != "Pod" || p.Name == "" {
			return nil, fmt.Errorf("%s: yaml block %d is a %q named %q, want a named Pod", path, i+1, p.Kind, p.Name)
		}
		if pods[p.Name] != nil {
			return nil, fmt.Errorf("%s: two pods named %s", path, p.Name)
		}
		pods[p.Name] = &p
	}
	return pods, nil
}

// DocBlocks are the page's fenced ```yaml blocks, in order.
func DocBlocks(root string) ([][]byte, error) {
	doc, err := os.ReadFile(filepath.Join(root, DocFile))
	if err != nil {
		return nil, err
	}
	return yamlBlocks(doc), nil
}

// yamlBlocks are the contents of the page's fenced ```yaml blocks.
func yamlBlocks(doc []byte) [][]byte {
	var out [][]byte
	var cur []byte
	in := false
	for line := range bytes.Lines(doc) {
		trimmed := bytes.TrimSpace(line)
		switch {
		case !in && bytes.Equal(trimmed, []byte("```yaml")):
			in, cur = true, nil
		case in && bytes.Equal(trimmed, []byte("```")):
			in = false
			out = append(out, cur)
		case in:
			cur = append(cur, line...)
		}
	}
	return out
}
