package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestSetupRoutesEveryLayerThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	l, err := Setup(&buf, Options{Format: "json", Level: "info"})
	if err != nil {
		t.Fatal(err)
	}
	l.Info("from slog", "k", 1)
	ctrllog.Log.WithName("ctrl").Info("from controller-runtime", "k", 2)
	klog.InfoS("from klog", "k", 3)
	klog.Flush()

	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		msgs = append(msgs, rec["msg"].(string))
	}
	want := []string{"from slog", "from controller-runtime", "from klog"}
	if strings.Join(msgs, "|") != strings.Join(want, "|") {
		t.Fatalf("messages = %q, want %q", msgs, want)
	}
}

func TestBadOptionsNameTheValue(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, Options{Format: "xml"}); err == nil || !strings.Contains(err.Error(), `"xml"`) {
		t.Fatalf("format error = %v", err)
	}
	if _, err := New(&bytes.Buffer{}, Options{Level: "loud"}); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Fatalf("level error = %v", err)
	}
}

func TestDebugLevelFilters(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, Options{Format: "text", Level: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), "shown") {
		t.Fatalf("output %q", buf.String())
	}
}
