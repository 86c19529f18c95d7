package evaluate

import (
	"slices"
)

// CurvePoint is one threshold of a precision–recall curve.
type CurvePoint struct {
	Threshold float64 `json:"threshold"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	Alarms    int     `json:"alarms"`
}

// Thresholds picks up to n thresholds from the series' distinct scores:
// values at evenly spaced ranks and the highest, highest first, plus extra.
func Thresholds(series []Series, n int, extra ...float64) []float64 {
	var all []float32
	for i := range series {
		for _, p := range series[i].Points {
			all = append(all, p.S)
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	out := slices.Clone(extra)
	if len(all) > 0 {
		out = append(out, float64(all[len(all)-1]))
	}
	for i := range n {
		if len(all) == 0 {
			break
		}
		out = append(out, float64(all[i*len(all)/n]))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	slices.Reverse(out)
	return out
}

// Curve evaluates every threshold (highest first) and returns the points
// and the average precision: the sum over thresholds of precision times
// the gain in recall, recall taken as its running maximum so that the
// re-raise period's small wobbles never subtract area.
func Curve(series []Series, thresholds []float64, d Definitions) ([]CurvePoint, float64) {
	var (
		pts    []CurvePoint
		ap, rc float64
	)
	for _, thr := range thresholds {
		m := At(series, thr, d, nil)
		pts = append(pts, CurvePoint{Threshold: thr, Precision: m.Precision, Recall: m.Recall, Alarms: m.Alarms})
		if m.Recall > rc {
			ap += (m.Recall - rc) * m.Precision
			rc = m.Recall
		}
	}
	return pts, ap
}
