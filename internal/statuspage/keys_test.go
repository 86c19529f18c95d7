package statuspage_test

import (
	"testing"

	"github.com/gpuheal/gpuheal/internal/agent"
	"github.com/gpuheal/gpuheal/internal/remediation"
	"github.com/gpuheal/gpuheal/internal/statuspage"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

// The page reads keys that the agent and the controller write; it keeps
// its own copies so that the controller's wiring can import it.
func TestKeysMatchTheirWriters(t *testing.T) {
	for _, k := range []struct{ ours, theirs, what string }{
		{statuspage.HealthyGPUsLabel, agent.HealthyGPUsLabel, "healthy GPU count label"},
		{statuspage.ScoreAnnotation, remediation.ScoreAnnotation, "health score annotation"},
		{statuspage.TierLabel, remediation.TierLabel, "health tier label"},
		{string(statuspage.GPUResource), string(testenv.GPUResource), "GPU resource"},
	} {
		if k.ours != k.theirs {
			t.Errorf("%s: the status page reads %q, the writer writes %q", k.what, k.ours, k.theirs)
		}
	}
}
