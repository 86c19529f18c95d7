package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
)

// chartInstanceTypes reads the instance types the chart's default node
// affinity (values.yaml gpuNodeAffinity) schedules the agent on.
func chartInstanceTypes(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "gpuheal", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		GPUNodeAffinity []corev1.NodeSelectorTerm `json:"gpuNodeAffinity"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("charts/gpuheal/values.yaml: %v", err)
	}
	var types []string
	for _, term := range values.GPUNodeAffinity {
		for _, e := range term.MatchExpressions {
			if e.Key == v1alpha1.LabelInstanceType && e.Operator == corev1.NodeSelectorOpIn {
				types = append(types, e.Values...)
			}
		}
	}
	if len(types) == 0 {
		t.Fatalf("values.yaml gpuNodeAffinity names no %s: the test reads the wrong shape", v1alpha1.LabelInstanceType)
	}
	return types
}

func family(instanceType string) string {
	f, _, _ := strings.Cut(instanceType, ".")
	return f
}

// The agent's instance-type table and the chart's default affinity stay
// in step: every type the chart schedules on has a known GPU count (so
// the broken-driver path and the expected count work there), every
// family the chart names is in the table, and the table names no type
// the chart would not schedule on.
func TestInstanceGPUsMatchChartAffinity(t *testing.T) {
	chart := chartInstanceTypes(t)
	var tableFamilies []string
	for typ := range instanceGPUs {
		tableFamilies = append(tableFamilies, family(typ))
		if !slices.Contains(chart, typ) {
			t.Errorf("instance type %s is in the agent's table but not in the chart's gpuNodeAffinity", typ)
		}
	}
	for _, typ := range chart {
		if c, ok := instanceGPUs[typ]; !ok || c < 1 {
			t.Errorf("the chart's gpuNodeAffinity schedules on %s, which the agent's instance-type table does not know", typ)
		}
		if !slices.Contains(tableFamilies, family(typ)) {
			t.Errorf("family %s (from %s) is in the chart's affinity but not in the agent's table", family(typ), typ)
		}
	}
}
