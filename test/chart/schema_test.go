package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestSchemaCoversEveryValue walks values.yaml and fails for each key that
// values.schema.json does not describe: every value is typed. A map the
// schema leaves open on purpose (labels, resources, a pass-through of a
// Kubernetes type) says so with additionalProperties.
func TestSchemaCoversEveryValue(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(here), "..", "..", "charts", "gpuheal")
	var values map[string]any
	raw, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	var schema map[string]any
	raw, err = os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	missing := uncovered(values, schema, "")
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("values.yaml key %s has no entry in values.schema.json", m)
	}
}

// uncovered lists the keys of v (at path) that schema s does not type.
func uncovered(v any, s map[string]any, path string) []string {
	if _, ok := s["type"]; !ok && s["anyOf"] == nil && s["enum"] == nil {
		return []string{path + " (no type)"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	props, _ := s["properties"].(map[string]any)
	var out []string
	for k, x := range m {
		p := strings.TrimPrefix(path+"."+k, ".")
		sub, ok := props[k].(map[string]any)
		if !ok {
			if _, open := s["additionalProperties"].(map[string]any); open {
				continue // a map of one kind: labels, annotations
			}
			if s["additionalProperties"] == true && props == nil {
				continue // a Kubernetes type passed through whole
			}
			out = append(out, p)
			continue
		}
		out = append(out, uncovered(x, sub, p)...)
	}
	return out
}
