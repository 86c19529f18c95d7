package agent

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// A bad model file stops the agent before it touches a GPU: NewDeps
// fails on the model with a backend that could not even be opened.
func TestNewDepsLoadsTheModelFirst(t *testing.T) {
	o := validOptions()
	o.Predictor.ModelFile = filepath.Join(t.TempDir(), "nope.json")
	o.Backend = "no-such-backend"
	if _, err := NewDeps(&o); err == nil || !strings.Contains(err.Error(), o.Predictor.ModelFile) {
		t.Fatalf("NewDeps with a bad model: %v, want the model error", err)
	}
}

// Run takes its GPU backend from Deps, closes it, and prints one
// snapshot with Once; without a backend it refuses to start.
func TestRunUsesTheGivenSource(t *testing.T) {
	o := validOptions()
	o.Once = true
	o.Output = "text"
	node, err := sim.New(sim.Options{NodeName: "n1", GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	src := &closeCounter{Node: node}
	var out strings.Builder
	if err := Run(context.Background(), &o, Deps{Source: src}, &out, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "GPUs 2 found") || src.closed != 1 {
		t.Errorf("output %q, closed %d times; want the sim's 2 GPUs and one close", out.String(), src.closed)
	}
	if err := Run(context.Background(), &o, Deps{}, io.Discard, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("Run without a GPU backend started")
	}
}

type closeCounter struct {
	*sim.Node
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return c.Node.Close() }
