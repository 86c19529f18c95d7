package predict

import (
	_ "embed"
	"fmt"
	"sync"
)

// defaultModel is the model shipped with gpuheal; docs/predictor.md has
// the command that regenerates it.
//
//go:embed model/default.json
var defaultModel []byte

var loadDefault = sync.OnceValues(func() (*Model, error) {
	m, err := Parse(defaultModel)
	if err != nil {
		return nil, fmt.Errorf("embedded default model: %w", err)
	}
	return m.ForInference(), nil // DefaultModelJSON has the whole file
})

// Default returns the model shipped with gpuheal, for scoring. It is
// parsed once; the Model is shared and immutable.
func Default() (*Model, error) { return loadDefault() }

// DefaultModelJSON returns a copy of the shipped model file.
func DefaultModelJSON() []byte { return append([]byte(nil), defaultModel...) }
