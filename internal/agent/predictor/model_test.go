package predictor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A model file that is missing or wrong stops the agent with an error
// that names the file and what is wrong with it.
func TestBadPredictorModelStopsTheAgent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := json.Marshal(sbeModel(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.json"), "no such file"},
		{"not JSON", write("garbage.json", "{\"format\": "), "decoding JSON"},
		{"truncated", write("half.json", string(good[:len(good)/2])), "decoding JSON"},
		{"wrong feature set", write("fs.json", strings.Replace(string(good), `"featureSet":1`, `"featureSet":7`, 1)), "featureSet 7"},
		{"bad tree", write("tree.json", strings.Replace(string(good), `"l":1,`, `"l":0,`, 1)), "trees[0].nodes[0].l: 0 is not after the node"},
		{"a directory", dir, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Options{ModelFile: tc.path})
			if err == nil || !strings.Contains(err.Error(), "--predictor-model "+tc.path+":") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("loading %s: %v, want an error naming the file and %q", tc.path, err, tc.want)
			}
			if strings.Count(err.Error(), tc.path) != 1 {
				t.Errorf("error names the file more than once: %v", err)
			}
		})
	}

	o := Options{ModelFile: write("good.json", string(good))}
	pm, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if pm.source != o.ModelFile || pm.threshold != 0.5 || len(pm.digest) != 12 {
		t.Errorf("loaded model: source %q, threshold %v, digest %q", pm.source, pm.threshold, pm.digest)
	}
	o.Threshold = 0.3
	if pm, err = Load(o); err != nil || pm.threshold != 0.3 {
		t.Errorf("--predictor-threshold 0.3: threshold %v, err %v", pm.threshold, err)
	}
	o.Mode = Off
	if pm, err = Load(o); pm != nil || err != nil {
		t.Errorf("--predictor=off loaded %v, %v", pm, err)
	}
}
