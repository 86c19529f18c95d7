package agent

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
	PredictorOn  = "on"
	PredictorOff = "off"
)

// PredictorOptions configure the failure predictor. The zero value is the
// default: on, with the embedded model and its own threshold.
type PredictorOptions struct {
	// Mode is PredictorOn or PredictorOff; "" means on.
	Mode string
	// ModelFile replaces the model shipped with gpuheal; "" keeps it.
	ModelFile string
	// Threshold overrides the model's alarm threshold; 0 keeps it.
	Threshold float64
}

func (p PredictorOptions) enabled() bool { return p.Mode != PredictorOff }

func (p PredictorOptions) validate() error {
	switch p.Mode {
	case "", PredictorOn, PredictorOff:
	default:
		return fmt.Errorf("--predictor %q: want on or off", p.Mode)
	}
	// Written so that NaN fails too.
	if p.Threshold != 0 && !(p.Threshold > 0 && p.Threshold <= 1) {
		return fmt.Errorf("--predictor-threshold %v: want a risk in (0,1], or 0 for the model's own threshold", p.Threshold)
	}
	return nil
}

// predictorModel is a loaded model with what /metrics says about it.
type predictorModel struct {
	model     *predict.Model
	threshold float64
	// source is "embedded" or the file's path; digest is the first 12 hex
	// digits of the file's SHA-256, which tells two models apart on a
	// dashboard without a version scheme.
	source, digest string
}

// loadPredictorModel loads the model the options name, or returns nil
// when the predictor is off or the agent prints one snapshot. A model
// file that cannot be read or fails its checks is an error naming the
// file: the agent then refuses to start rather than run without the
// predictor the operator asked for.
func loadPredictorModel(o *Options) (*predictorModel, error) {
	if o.predictorModel != nil || o.Once || !o.Predictor.enabled() {
		return o.predictorModel, nil
	}
	pm := &predictorModel{source: "embedded"}
	var data []byte
	if path := o.Predictor.ModelFile; path != "" {
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
	if o.Predictor.Threshold != 0 {
		pm.threshold = o.Predictor.Threshold
	}
	return pm, nil
}
