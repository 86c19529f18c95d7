// Package gang recognises the gangs of distributed training jobs: the pods
// that live and die together, so that evicting one of them kills them all.
// Given a node's pods, a Finder says which gang each belongs to and lists
// every member of that gang on any node, for JobSet, indexed Jobs,
// LeaderWorkerSet groups, Kueue pod groups, Volcano PodGroups and pods
// sharing an operator-chosen label, and names the Kueue Workload that
// admitted the gang where there is one.
//
// It reads through a controller-runtime client.Reader (cached or not), with
// unstructured objects for the kinds of CRDs, and asks API discovery which
// of those kinds the cluster serves: a kind whose CRD is absent has no gangs
// there, which is logged once and is not an error.
package gang

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kinds of gang, the value of Gang.Kind.
const (
	KindJobSet          = "JobSet"
	KindLeaderWorkerSet = "LeaderWorkerSet"
	// KindIndexedJob is a batch/v1 Job with completionMode Indexed and
	// parallelism above 1.
	KindIndexedJob = "IndexedJob"
	// KindKueuePodGroup is a group of plain pods that Kueue admits as one
	// Workload (label kueue.x-k8s.io/pod-group-name).
	KindKueuePodGroup = "KueuePodGroup"
	// KindVolcanoPodGroup is a Volcano PodGroup whose minMember is above 1.
	KindVolcanoPodGroup = "VolcanoPodGroup"
	// KindLabel is the pods of one namespace sharing a value of a label key
	// the operator named (Options.LabelKeys).
	KindLabel = "Label"
)

// Gang is one group of pods that must be treated as one: signalled
// together, evicted together, counted once.
type Gang struct {
	// Kind says which rule recognised the gang (KindJobSet, ...).
	Kind string
	// Namespace and Name name the object the gang is: the JobSet, the
	// LeaderWorkerSet, the Job, the Kueue pod group, the Volcano PodGroup;
	// for KindLabel the Name is "key=value".
	Namespace, Name string
	// Group is the group within that object: the LeaderWorkerSet group
	// index; empty for the other kinds.
	Group string
	// Members are every pod of the gang that has not finished (phase
	// neither Succeeded nor Failed), on any node, sorted.
	Members []types.NamespacedName
	// Nodes are the nodes the members are bound to, sorted; a member not
	// yet scheduled adds none.
	Nodes []string
	// Kueue is the Kueue Workload that admitted the gang, when the cluster
	// serves Kueue and one is found; Kueue's own eviction path (deactivate
	// or evict the Workload) stops every member at once.
	Kueue *types.NamespacedName
}

// String is "Kind namespace/name" (with "[group]" for a LeaderWorkerSet
// group): the gang's identity in logs, events and audit records.
func (g *Gang) String() string {
	s := g.Kind + " " + g.Namespace + "/" + g.Name
	if g.Group != "" {
		s += "[" + g.Group + "]"
	}
	return s
}

// Options configures a Finder.
type Options struct {
	// LabelKeys are label keys whose shared value makes the pods of one
	// namespace a gang (the controller's --gang-label), for training
	// operators the Finder does not know by name. They are tried in order
	// after every built-in kind.
	LabelKeys []string
}

// Finder finds gangs. It is safe for concurrent use; each Gangs call reads
// afresh.
type Finder struct {
	reader    client.Reader
	discovery Discovery
	opts      Options

	// mu guards absent: the kinds last seen unserved, so that each absence
	// is logged once, and a CRD installed later is logged when it appears.
	mu     sync.Mutex
	absent map[string]bool
}

// NewFinder returns a Finder that reads objects through r and asks d which
// APIs the cluster serves (a discovery.DiscoveryInterface; a memory-cached
// one spares the API server when the controller calls often).
func NewFinder(r client.Reader, d Discovery, opts Options) (*Finder, error) {
	for _, k := range opts.LabelKeys {
		if strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("gang label key %q: empty", k)
		}
	}
	return &Finder{reader: r, discovery: d, opts: opts, absent: map[string]bool{}}, nil
}

// Gangs maps the UID of each of pods that belongs to a gang to that gang;
// a pod in no gang maps to nothing. Pods of one gang share one *Gang. Each
// gang's members are listed once per call however many of its pods are
// given, and each object (Job, PodGroup, a namespace's Workloads) is read
// at most once per call.
func (f *Finder) Gangs(ctx context.Context, pods []corev1.Pod) (map[types.UID]*Gang, error) {
	out := map[types.UID]*Gang{}
	if len(pods) == 0 {
		return out, nil
	}
	api, err := f.served(ctx)
	if err != nil {
		return nil, err
	}
	c := newCall(f, api)
	for i := range pods {
		g, err := c.gangOf(ctx, &pods[i])
		if err != nil {
			return nil, err
		}
		if g != nil {
			out[pods[i].UID] = g
		}
	}
	return out, nil
}

// finish sorts a gang's members and nodes and makes sure the pod that led
// to it is among them (a cached list may not have it yet).
func finish(g *Gang, members []corev1.Pod, from *corev1.Pod) {
	seen := map[types.NamespacedName]bool{}
	nodes := map[string]bool{}
	add := func(p *corev1.Pod) {
		key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		if seen[key] || finished(p) {
			return
		}
		seen[key] = true
		g.Members = append(g.Members, key)
		if p.Spec.NodeName != "" {
			nodes[p.Spec.NodeName] = true
		}
	}
	for i := range members {
		add(&members[i])
	}
	add(from)
	slices.SortFunc(g.Members, func(a, b types.NamespacedName) int {
		return strings.Compare(a.String(), b.String())
	})
	for n := range nodes {
		g.Nodes = append(g.Nodes, n)
	}
	slices.Sort(g.Nodes)
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
