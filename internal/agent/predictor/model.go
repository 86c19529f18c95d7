package predictor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// Values of --predictor.
const (
	On  = "on"
	Off = "off"
)

// Options configure the failure predictor. The zero value is the default:
// on, with the embedded model and its own threshold.
type Options struct {
	// Mode is On or Off; "" means on.
	Mode string
	// ModelFile replaces the model shipped with gpuheal; "" keeps it.
	ModelFile string
	// Threshold overrides the model's alarm threshold; 0 keeps it.
	Threshold float64
}

// Enabled says whether the predictor runs.
func (p Options) Enabled() bool { return p.Mode != Off }

// Validate names the first bad option.
func (p Options) Validate() error {
	switch p.Mode {
	case "", On, Off:
	default:
		return fmt.Errorf("--predictor %q: want on or off", p.Mode)
	}
	// Written so that NaN fails too.
	if p.Threshold != 0 && !(p.Threshold > 0 && p.Threshold <= 1) {
		return fmt.Errorf("--predictor-threshold %v: want a risk in (0,1], or 0 for the model's own threshold", p.Threshold)
	}
	return nil
}

// Model is a loaded model with what /metrics says about it.
type Model struct {
	model     *predict.Model
	threshold float64
	// source is "embedded" or the file's path; digest is the first 12 hex
	// digits of the file's SHA-256, which tells two models apart on a
	// dashboard without a version scheme.
	source, digest string
}

// Load loads the model the options name, or returns nil when the
// predictor is off. A model file that cannot be read or fails its checks
// is an error naming the file: the agent then refuses to start rather
// than run without the predictor the operator asked for.
func Load(o Options) (*Model, error) {
	if !o.Enabled() {
		return nil, nil
	}
	pm := &Model{source: "embedded"}
	var data []byte
	if path := o.ModelFile; path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			// The PathError would name the file a second time.
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				err = fmt.Errorf("%s: %w", pe.Op, pe.Err)
			}
			return nil, fmt.Errorf("--predictor-model %s: %w", path, err)
		}
		if pm.model, err = predict.Parse(data); err != nil {
			return nil, fmt.Errorf("--predictor-model %s: %w", path, err)
		}
		pm.model = pm.model.ForInference()
		pm.source = path
	} else {
		var err error
		if pm.model, err = predict.Default(); err != nil {
			return nil, err
		}
		data = predict.DefaultModelJSON()
	}
	sum := sha256.Sum256(data)
	pm.digest = hex.EncodeToString(sum[:6])
	pm.threshold = pm.model.Threshold
	if o.Threshold != 0 {
		pm.threshold = o.Threshold
	}
	return pm, nil
}

// Source is "embedded" or the model file's path.
func (m *Model) Source() string { return m.source }

// Digest is the first 12 hex digits of the model file's SHA-256.
func (m *Model) Digest() string { return m.digest }

// Threshold is the risk at which the predictor warns.
func (m *Model) Threshold() float64 { return m.threshold }
