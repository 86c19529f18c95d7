//go:build gpu

package hardware

import (
	"context"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/gpu/host"
	"github.com/gpuheal/gpuheal/internal/gpu/nvml"
	"github.com/gpuheal/gpuheal/internal/gpu/smi"
	"github.com/gpuheal/gpuheal/internal/gpucheck"
)

// TestHealthyGPUPassesTheAgentChecks: a working GPU, read through each
// backend with the host probes the agent adds, passes every check of the
// health gate's agent report; the report is logged for the record.
func TestHealthyGPUPassesTheAgentChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nv, err := nvml.New(nvml.Options{})
	if err != nil {
		t.Fatalf("nvml: %v", err)
	}
	defer nv.Close()
	for _, src := range []gpu.Source{nv, smi.New(smi.Options{})} {
		s, err := src.Snapshot(ctx)
		if err != nil {
			t.Fatalf("%s snapshot: %v", src.Name(), err)
		}
		facts, errs := host.Probe(host.Options{})
		host.Fill(s, facts, errs)
		for _, c := range gpucheck.Judge(s) {
			t.Logf("%s %s passed=%v value=%q expected=%q %s", src.Name(), c.Name, c.Passed, c.Value, c.Expected, c.Message)
			if !c.Passed {
				t.Errorf("%s: %s failed on a working GPU: %s", src.Name(), c.Name, c.Message)
			}
		}
	}
}
