package predict

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// smallFile is a valid two-tree model: the first tree splits on the 30
// min PCIe replay count.
func smallFile() *File {
	f := &File{Format: FileFormat, Version: FileVersion, FeatureSet: FeatureSet, Features: FeatureNames(),
		IntervalSeconds: 30, HorizonSeconds: 1800, MinLeadSeconds: 600, Threshold: 0.5, Base: -2}
	replay30m := sigPCIeReplay*len(signalFeatures) + sf30m
	f.Trees = []Tree{
		{Nodes: []Node{Split(replay30m, 100, 1, 2), Leaf(-1), Leaf(4)}},
		{Nodes: []Node{Leaf(0.5)}},
	}
	return f
}

func smallJSON(t testing.TB, edit func(map[string]any)) []byte {
	t.Helper()
	data, err := json.Marshal(smallFile())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScore(t *testing.T) {
	m, err := Parse(smallJSON(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	f := make([]float32, NumFeatures)
	replay30m := sigPCIeReplay*len(signalFeatures) + sf30m
	for _, tc := range []struct {
		replays float32
		margin  float64
	}{{100, -2 - 1 + 0.5}, {101, -2 + 4 + 0.5}, {NaN, -2 + 4 + 0.5}} {
		f[replay30m] = tc.replays
		want := 1 / (1 + math.Exp(-tc.margin))
		if got := m.Score(f); math.Abs(got-want) > 1e-6 {
			t.Errorf("replays %v: score %v, want %v", tc.replays, got, want)
		}
	}
}

func TestParseNamesTheBadField(t *testing.T) {
	setNode := func(tree, n int, v map[string]any) func(map[string]any) {
		return func(m map[string]any) {
			m["trees"].([]any)[tree].(map[string]any)["nodes"].([]any)[n] = v
		}
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"format", func(m map[string]any) { m["format"] = "onnx" }, `format "onnx"`},
		{"version", func(m map[string]any) { m["version"] = 2 }, "version 2"},
		{"feature set", func(m map[string]any) { m["featureSet"] = 9 }, "featureSet 9"},
		{"feature order", func(m map[string]any) {
			fs := m["features"].([]any)
			fs[3], fs[4] = fs[4], fs[3]
		}, "features[3]"},
		{"feature count", func(m map[string]any) { m["features"] = m["features"].([]any)[1:] }, "features:"},
		{"threshold", func(m map[string]any) { m["threshold"] = 1.5 }, "threshold 1.5"},
		{"interval", func(m map[string]any) { m["intervalSeconds"] = 10 }, "intervalSeconds 10"},
		{"lead", func(m map[string]any) { m["minLeadSeconds"] = 1800 }, "minLeadSeconds 1800"},
		{"unknown field", func(m map[string]any) { m["treez"] = 1 }, `unknown field "treez"`},
		{"no trees", func(m map[string]any) { m["trees"] = []any{} }, "trees: empty"},
		{"empty tree", func(m map[string]any) { m["trees"].([]any)[1] = map[string]any{"nodes": []any{}} }, "trees[1].nodes: empty"},
		{"child before parent", setNode(0, 0, map[string]any{"f": 1, "t": 2, "l": 0, "r": 2}), "trees[0].nodes[0].l: 0"},
		{"child past the end", setNode(0, 0, map[string]any{"f": 1, "t": 2, "l": 1, "r": 7}), "trees[0].nodes[0].r: 7"},
		{"feature index", setNode(0, 0, map[string]any{"f": 999, "t": 2, "l": 1, "r": 2}), "trees[0].nodes[0].f: 999"},
		{"split without threshold", setNode(0, 0, map[string]any{"f": 1, "l": 1, "r": 2}), "trees[0].nodes[0].t: missing"},
		{"leaf and split", setNode(0, 1, map[string]any{"f": 1, "v": 2}), "trees[0].nodes[1]: both"},
		{"empty node", setNode(0, 2, map[string]any{}), "trees[0].nodes[2].f: missing"},
		{"not JSON", func(m map[string]any) { m["base"] = "x" }, "decoding JSON"},
	} {
		_, err := Parse(smallJSON(t, tc.edit))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to name %q", tc.name, err, tc.want)
		}
	}
}

func TestDefaultModel(t *testing.T) {
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	f := m.File()
	if f.HorizonSeconds != 1800 || f.MinLeadSeconds != 600 || m.Trees() < 10 || !(m.Threshold > 0 && m.Threshold < 1) {
		t.Errorf("default model: horizon %d, lead %d, %d trees, threshold %v", f.HorizonSeconds, f.MinLeadSeconds, m.Trees(), m.Threshold)
	}
	// A quiet GPU is low risk; the shipped model must say so.
	st := NewState()
	var risk float64
	for _, s := range randomHistory(1, 1)[:1] {
		s.Xids, s.ClockEventReasons, s.PCIeLinkGen, s.NVLinkUp, s.RemappedRowsPending = nil, 0, 5, 18, false
		risk = m.Score(st.Update(&s))
	}
	if risk >= m.Threshold {
		t.Errorf("a quiet GPU's risk %v is at or above the threshold %v", risk, m.Threshold)
	}
}

func FuzzParseModel(f *testing.F) {
	f.Add(smallJSON(f, nil))
	f.Add(DefaultModelJSON())
	f.Add([]byte(`{"format":"gpuheal-failure-model","version":1,"trees":[{"nodes":[{"f":0,"t":1,"l":1,"r":1}]}]}`))
	feat := make([]float32, NumFeatures)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must score without panicking or looping.
		if s := m.Score(feat); !(s >= 0 && s <= 1) {
			t.Fatalf("score %v outside [0,1]", s)
		}
	})
}

func TestForInferenceScoresTheSame(t *testing.T) {
	full, err := Parse(DefaultModelJSON())
	if err != nil {
		t.Fatal(err)
	}
	slim := full.ForInference()
	if slim.File().Trees != nil || full.File().Trees == nil {
		t.Fatal("ForInference must drop the trees of its own copy only")
	}
	if slim.File().HorizonSeconds != full.File().HorizonSeconds || slim.Threshold != full.Threshold {
		t.Fatal("header lost")
	}
	st := NewState()
	for i := range 50 {
		s := Sample{Time: time.Unix(int64(i)*30, 0)}
		for g := range s.Gauges {
			s.Gauges[g] = float32(i % 7)
		}
		s.Counters[CounterECCCorrected] = uint64(i * i)
		s.CountersRead = 1 << CounterECCCorrected
		f := st.Update(&s)
		if a, b := full.Score(f), slim.Score(f); a != b {
			t.Fatalf("sample %d: scores %v and %v differ", i, a, b)
		}
	}
}
