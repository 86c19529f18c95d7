package simfleet

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// The lineage (which board of its slot each node is) lives in the
// fleet's directory, so that a restarted fleet goes on counting.
func (f *simFleet) lineagePath() string { return filepath.Join(f.dir, "hardware", "lineage.json") }

// loadLineage reads the fleet's lineage; a missing or damaged file starts
// a new one (the slots' own names are still board 0).
func (f *simFleet) loadLineage() {
	data, err := os.ReadFile(f.lineagePath())
	if err == nil && json.Unmarshal(data, &f.lineage) == nil {
		return
	}
	if err != nil && !os.IsNotExist(err) {
		f.log.Warn("sim fleet: reading the board lineage; counting boards anew", "err", err)
	}
	f.lineage = schedule.Lineage{}
}

// observeBoards records every listed node in the lineage, oldest first,
// so that a replacement follows the machine it replaced. f.mu is held.
func (f *simFleet) observeBoards(nodes []kubecore.Node) {
	order := make([]*kubecore.Node, len(nodes))
	for i := range nodes {
		order[i] = &nodes[i]
	}
	slices.SortStableFunc(order, func(a, b *kubecore.Node) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	changed := false
	for _, n := range order {
		changed = f.lineage.Observe(n.Name, n.Annotations[v1alpha1.AnnotationReplaces]) || changed
	}
	if changed {
		if err := writeJSONFile(f.lineagePath(), f.lineage); err != nil {
			f.log.Error("sim fleet: keeping the board lineage on disk", "err", err)
		}
	}
}
