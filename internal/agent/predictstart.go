package agent

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/exporter"
	"github.com/gpuheal/gpuheal/internal/agent/nodestatus"
	"github.com/gpuheal/gpuheal/internal/agent/predictor"
)

// startPredictor registers the predictor's metrics and, inside a cluster,
// starts publishing its risk on the Node. pm nil (--predictor=off) returns
// nil after removing an annotation an earlier run may have left.
func startPredictor(ctx context.Context, o *Options, pm *predictor.Model, exp *exporter.Exporter, kube rest.Interface, clk clock.Clock, log *slog.Logger) (*predictor.Predictor, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var pub *nodestatus.Risk
	if kube != nil {
		pub = nodestatus.NewRisk(kube, o.NodeName, clk, log)
		go pub.Run(ctx)
	}
	if pm == nil {
		if pub != nil {
			pub.RemoveStale()
		}
		return nil, nil
	}
	p := predictor.New(pm, o.Interval, log)
	if pub != nil {
		p.Publish = func(maxRisk float64, alarms []predictor.Alarm) {
			warnings := make([]nodestatus.Warning, len(alarms))
			for i, a := range alarms {
				warnings[i] = nodestatus.Warning{Key: a.Key(), Reason: v1alpha1.EventReasonGPUFailurePredicted, Message: a.Message()}
			}
			pub.Set(maxRisk, warnings)
		}
	}
	if err := exp.Registry().Register(p.Metrics()); err != nil {
		return nil, fmt.Errorf("registering predictor metrics: %w", err)
	}
	log.Info("failure predictor on", "model", pm.Source(), "sha256", pm.Digest(), "threshold", pm.Threshold())
	return p, nil
}
