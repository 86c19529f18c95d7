package predict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// Model is a loaded, checked model file, laid out for fast scoring. It is
// immutable and safe for concurrent use.
type Model struct {
	// Threshold is the operating point chosen at training: Score ≥
	// Threshold is an alarm.
	Threshold float64
	file      *File
	base      float64
	roots     []int32
	nodes     []node
}

// node is a tree node in one flat array: a leaf has feature −1 and keeps
// its value in threshold.
type node struct {
	feature     int32
	threshold   float32
	left, right int32
}

// Score is the model's risk for one feature vector (NumFeatures long, as
// State.Update returns it): a number in [0,1], read as the probability
// that the GPU fails within the model's horizon under the failure rates of
// the fleet it was trained on. It does not allocate.
func (m *Model) Score(features []float32) float64 {
	_ = features[NumFeatures-1]
	sum := m.base
	for _, r := range m.roots {
		i := r
		for {
			n := &m.nodes[i]
			if n.feature < 0 {
				sum += float64(n.threshold)
				break
			}
			if features[n.feature] <= n.threshold {
				i = n.left
			} else {
				i = n.right
			}
		}
	}
	return 1 / (1 + math.Exp(-sum))
}

// Trees is how many trees the model scores with.
func (m *Model) Trees() int { return len(m.roots) }

// ForInference returns a model that scores the same but keeps only the
// header of its file (File().Trees is nil): the decoded trees take ~0.7
// MiB, which a process that only scores (the agent) need not hold.
func (m *Model) ForInference() *Model {
	c := *m
	header := *m.file
	header.Trees = nil
	c.file = &header
	return &c
}

// File returns the model file the model was loaded from. Callers must not
// change it.
func (m *Model) File() *File { return m.file }

// LoadFile reads and checks a model file.
func LoadFile(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading model file: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Parse decodes and checks a model file. Errors name the offending field,
// e.g. "trees[3].nodes[7].l: 12 is not after the node and within the
// tree's 9 nodes".
func Parse(data []byte) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("model file: decoding JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("model file: data after the JSON object")
	}
	return Compile(&f)
}

// Compile checks a model file and lays it out for scoring.
func Compile(f *File) (*Model, error) {
	if err := f.checkHeader(); err != nil {
		return nil, fmt.Errorf("model file: %w", err)
	}
	m := &Model{Threshold: f.Threshold, file: f, base: f.Base}
	for ti, t := range f.Trees {
		if len(t.Nodes) == 0 {
			return nil, fmt.Errorf("model file: trees[%d].nodes: empty", ti)
		}
		off := int32(len(m.nodes))
		m.roots = append(m.roots, off)
		for ni, n := range t.Nodes {
			c, err := compileNode(n, ni, len(t.Nodes))
			if err != nil {
				return nil, fmt.Errorf("model file: trees[%d].nodes[%d]%w", ti, ni, err)
			}
			if c.feature >= 0 {
				c.left += off
				c.right += off
			}
			m.nodes = append(m.nodes, c)
		}
	}
	return m, nil
}

func (f *File) checkHeader() error {
	switch {
	case f.Format != FileFormat:
		return fmt.Errorf("format %q: want %q", f.Format, FileFormat)
	case f.Version != FileVersion:
		return fmt.Errorf("version %d: this gpuheal reads version %d", f.Version, FileVersion)
	case f.FeatureSet != FeatureSet:
		return fmt.Errorf("featureSet %d: this gpuheal computes feature set %d", f.FeatureSet, FeatureSet)
	case f.IntervalSeconds != int(Interval.Seconds()):
		return fmt.Errorf("intervalSeconds %d: the features use %d", f.IntervalSeconds, int(Interval.Seconds()))
	case f.HorizonSeconds <= 0:
		return fmt.Errorf("horizonSeconds %d: must be positive", f.HorizonSeconds)
	case f.MinLeadSeconds < 0 || f.MinLeadSeconds >= f.HorizonSeconds:
		return fmt.Errorf("minLeadSeconds %d: must be in [0, horizonSeconds)", f.MinLeadSeconds)
	case !(f.Threshold >= 0 && f.Threshold <= 1):
		return fmt.Errorf("threshold %v: must be in [0,1]", f.Threshold)
	case math.IsNaN(f.Base) || math.IsInf(f.Base, 0):
		return fmt.Errorf("base %v: must be finite", f.Base)
	case len(f.Trees) == 0:
		return fmt.Errorf("trees: empty")
	}
	want := FeatureNames()
	if len(f.Features) != len(want) {
		return fmt.Errorf("features: %d names, feature set %d has %d", len(f.Features), FeatureSet, len(want))
	}
	for i, name := range want {
		if f.Features[i] != name {
			return fmt.Errorf("features[%d]: %q, feature set %d has %q there", i, f.Features[i], FeatureSet, name)
		}
	}
	return nil
}

// compileNode checks one node; errors start with the field (".f: …").
func compileNode(n Node, index, count int) (node, error) {
	split := n.F != nil || n.T != nil || n.L != nil || n.R != nil
	switch {
	case n.V != nil && split:
		return node{}, fmt.Errorf(": both a leaf value (v) and a split (f, t, l, r)")
	case n.V != nil:
		if !finite(float32(*n.V)) {
			return node{}, fmt.Errorf(".v: %v is not finite", *n.V)
		}
		return node{feature: -1, threshold: float32(*n.V)}, nil
	case n.F == nil:
		return node{}, fmt.Errorf(".f: missing (a node is a leaf with v or a split with f, t, l, r)")
	case n.T == nil:
		return node{}, fmt.Errorf(".t: missing")
	case n.L == nil:
		return node{}, fmt.Errorf(".l: missing")
	case n.R == nil:
		return node{}, fmt.Errorf(".r: missing")
	case *n.F < 0 || *n.F >= NumFeatures:
		return node{}, fmt.Errorf(".f: %d is not a feature index (0..%d)", *n.F, NumFeatures-1)
	case !finite(float32(*n.T)):
		return node{}, fmt.Errorf(".t: %v is not finite", *n.T)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"l", *n.L}, {"r", *n.R}} {
		// Children after their parent: no cycles, and scoring ends.
		if c.v <= index || c.v >= count {
			return node{}, fmt.Errorf(".%s: %d is not after the node and within the tree's %d nodes", c.name, c.v, count)
		}
	}
	return node{feature: int32(*n.F), threshold: float32(*n.T), left: int32(*n.L), right: int32(*n.R)}, nil
}

func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
