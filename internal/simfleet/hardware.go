package simfleet

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"

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
	// Surfaced are the GPUs whose latent fault (the board's) surfaced as
	// a fatal one in this boot.
	Surfaced []int `json:"surfaced,omitempty"`
}

// boardFaults are the faults a machine keeps through its reboots (a new
// boot keeps them) but not its replacement (a new node, a new UID, draws
// clean hardware): the latent faults of its board, and fabric faults (a
// bad cable or switch port, a dead NIC: sim.OutlivesReboot).
type boardFaults struct {
	UID    string      `json:"uid"`
	Faults []sim.Fault `json:"faults"`
	// Faulted: one of them is fatal, so the machine is broken in every
	// boot until its replacement.
	Faulted bool `json:"faulted,omitempty"`
}

// latent says whether the board carries a latent fault, the kind that
// workload time brings to the surface.
func (b boardFaults) latent() bool {
	return slices.ContainsFunc(b.Faults, func(f sim.Fault) bool { return f.Kind == sim.KindLatent })
}

func (f *simFleet) boardPath(node string) string {
	return filepath.Join(f.dir, "hardware", node+".board.json")
}

// loadBoard returns the latent faults of the node's board, if any.
func (f *simFleet) loadBoard(node, uid string) boardFaults {
	var b boardFaults
	data, err := os.ReadFile(f.boardPath(node))
	if err != nil || json.Unmarshal(data, &b) != nil || b.UID != uid {
		return boardFaults{UID: uid}
	}
	return b
}

func (f *simFleet) saveBoard(node string, b boardFaults) error {
	return writeJSONFile(f.boardPath(node), b)
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
	return writeJSONFile(f.faultsPath(node), nf)
}

// writeJSONFile replaces path with v's JSON, whole or not at all.
func writeJSONFile(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
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
