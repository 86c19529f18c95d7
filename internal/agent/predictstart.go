package agent

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/internal/agent/exporter"
)

// startPredictor registers the predictor's metrics and, inside a cluster,
// starts publishing its risk on the Node. pm nil (--predictor=off) returns
// nil after removing an annotation an earlier run may have left.
func startPredictor(ctx context.Context, o *Options, pm *predictorModel, exp *exporter.Exporter, kube rest.Interface, log *slog.Logger) (*predictor, error) {
	var pub *riskPublisher
	if kube != nil {
		pub = newRiskPublisher(kube, o.NodeName, log)
		go pub.run(ctx)
	}
	if pm == nil {
		if pub != nil {
			pub.poke()
		}
		return nil, nil
	}
	p := newPredictor(pm, o.Interval, log)
	if pub != nil {
		p.publish = pub.set
	}
	if err := exp.Registry().Register(newPredictMetrics(p)); err != nil {
		return nil, fmt.Errorf("registering predictor metrics: %w", err)
	}
	log.Info("failure predictor on", "model", pm.source, "sha256", pm.digest, "threshold", pm.threshold)
	return p, nil
}
