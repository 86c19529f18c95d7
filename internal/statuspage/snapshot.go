package statuspage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
)

// snapshots builds the fleet and incident views and keeps the last ones
// for maxAge, shared by every request and stream.
type snapshots struct {
	reader       client.Reader
	clock        clock.PassiveClock
	maxAge       time.Duration
	maxIncidents int

	mu        sync.Mutex
	at        time.Time
	fleet     []byte
	incidents []byte
}

// get returns the JSON of the fleet and of the incidents, at most maxAge
// old. Concurrent callers wait for one build rather than each making one.
func (s *snapshots) get(ctx context.Context) (fleet, incidents []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if s.fleet != nil && now.Sub(s.at) < s.maxAge {
		return s.fleet, s.incidents, nil
	}
	// The build serves every waiting caller: one caller going away must
	// not fail it for the others.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	f, in, err := build(ctx, s.reader, s.maxIncidents)
	if err != nil {
		return nil, nil, err
	}
	if s.fleet, err = json.Marshal(f); err != nil {
		return nil, nil, fmt.Errorf("encoding the fleet: %w", err)
	}
	if s.incidents, err = json.Marshal(in); err != nil {
		return nil, nil, fmt.Errorf("encoding the incidents: %w", err)
	}
	s.at = now
	return s.fleet, s.incidents, nil
}

// build reads the cluster once. The lists are read without deep copies:
// nothing here writes to them, and on a fleet of thousands of nodes a copy
// of every Node each interval would be most of the page's cost.
func build(ctx context.Context, r client.Reader, maxIncidents int) (fleetview.View, Incidents, error) {
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fleetview.View{}, Incidents{}, fmt.Errorf("listing nodes: %w", err)
	}
	var rems v1alpha1.NodeRemediationList
	if err := r.List(ctx, &rems, client.UnsafeDisableDeepCopy); err != nil {
		return fleetview.View{}, Incidents{}, fmt.Errorf("listing node remediations: %w", err)
	}
	var policies v1alpha1.RemediationPolicyList
	if err := r.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		return fleetview.View{}, Incidents{}, fmt.Errorf("listing remediation policies: %w", err)
	}
	fleet := fleetview.Build(nodes.Items, rems.Items)
	fleet.Policies = fleetview.PoliciesOf(policies.Items)

	// Newest first; ties (creation times have whole seconds) by name so
	// that the order is stable between snapshots.
	items := make([]*v1alpha1.NodeRemediation, len(rems.Items))
	for i := range rems.Items {
		items[i] = &rems.Items[i]
	}
	slices.SortFunc(items, func(a, b *v1alpha1.NodeRemediation) int {
		if c := fleetview.Opened(b).Compare(fleetview.Opened(a)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	in := Incidents{Items: make([]Incident, 0, min(len(items), maxIncidents)), Total: len(items)}
	for _, nr := range items[:min(len(items), maxIncidents)] {
		in.Items = append(in.Items, incidentOf(nr))
	}
	return fleet, in, nil
}
