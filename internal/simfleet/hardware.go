package simfleet

import (
	"encoding/json"
	"os"
	"path/filepath"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// nodeFaults is what a node's simulated hardware carries in this boot,
// kept on disk so that an agent restart finds the GPU still broken.
type nodeFaults struct {
	// Boot identifies the machine's boot: its UID and last reboot token.
	Boot    string      `json:"boot"`
	Faults  []sim.Fault `json:"faults"`
	Faulted bool        `json:"faulted"`
}

// bootOf is the node's UID and the kwok provider's record of its last
// reboot.
func bootOf(n *kubecore.Node) string {
	return string(n.UID) + "/" + n.Annotations[v1alpha1.AnnotationKwokRebootToken]
}

func (f *simFleet) faultsPath(node string) string {
	return filepath.Join(f.dir, "hardware", node+".json")
}

// loadFaults returns the faults of this boot of the node, if any.
func (f *simFleet) loadFaults(node, boot string) nodeFaults {
	var nf nodeFaults
	data, err := os.ReadFile(f.faultsPath(node))
	if err != nil || json.Unmarshal(data, &nf) != nil || nf.Boot != boot {
		return nodeFaults{Boot: boot}
	}
	return nf
}

func (f *simFleet) saveFaults(node string, nf nodeFaults) error {
	data, err := json.Marshal(nf)
	if err != nil {
		return err
	}
	path := f.faultsPath(node)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// journal appends one injection to the journal.
func (f *simFleet) journal(in schedule.Injection) {
	if err := schedule.AppendInjection(f.dir, in); err != nil {
		f.log.Error("sim fleet: journaling an injection", "err", err)
	}
}
