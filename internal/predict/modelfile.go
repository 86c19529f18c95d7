package predict

import (
	"encoding/json"
	"strconv"
)

// FileFormat and FileVersion identify a model file. Version changes when
// the file's layout changes; FeatureSet when the features do.
const (
	FileFormat  = "gpuheal-failure-model"
	FileVersion = 1
)

// File is a model file: gradient-boosted regression trees over the
// features of one FeatureSet. The risk is the logistic function of Base
// plus the leaf value each tree reaches. A split node sends a sample left
// when its feature is ≤ T (NaN, an unreported reading, goes right).
type File struct {
	Format          string   `json:"format"`
	Version         int      `json:"version"`
	FeatureSet      int      `json:"featureSet"`
	Features        []string `json:"features"`
	IntervalSeconds int      `json:"intervalSeconds"`
	// HorizonSeconds and MinLeadSeconds are the definitions the model was
	// trained and its threshold chosen for (docs/predictor.md).
	HorizonSeconds int `json:"horizonSeconds"`
	MinLeadSeconds int `json:"minLeadSeconds"`
	// Threshold is the operating point: risk ≥ Threshold is an alarm.
	Threshold float64 `json:"threshold"`
	Base      float64 `json:"base"`
	Trees     []Tree  `json:"trees"`
	// Training records how the model was made (gpuheal model train writes
	// it); Load does not interpret it.
	Training json.RawMessage `json:"training,omitempty"`
}

// Tree is one regression tree; Nodes[0] is the root and a node's children
// come after it.
type Tree struct {
	Nodes []Node `json:"nodes"`
}

// Node is a split (F, T, L, R) or a leaf (V). Pointers tell a missing key
// from a zero, so Load can name what a node lacks.
type Node struct {
	F *int     `json:"f,omitempty"`
	T *Float32 `json:"t,omitempty"`
	L *int     `json:"l,omitempty"`
	R *int     `json:"r,omitempty"`
	V *Float32 `json:"v,omitempty"`
}

// Float32 is written with the fewest digits that read back to the same
// float32, which keeps model files small and exact.
type Float32 float32

// MarshalJSON writes the shortest exact float32 form.
func (f Float32) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 32), nil
}

// Split and Leaf build nodes (for the trainer and tests).
func Split(feature int, threshold float32, left, right int) Node {
	t := Float32(threshold)
	return Node{F: &feature, T: &t, L: &left, R: &right}
}

// Leaf builds a leaf node.
func Leaf(value float32) Node {
	v := Float32(value)
	return Node{V: &v}
}
