package evaluate

import (
	"bytes"
	"fmt"
)

// CurveSVG draws the model's precision–recall curve, its operating point
// and the baseline rules' points as a small standalone SVG image.
func CurveSVG(r *Report) []byte {
	const (
		w, h          = 560, 420
		left, top     = 60, 30
		plotW, plotH  = 460, 330
		modelColor    = "#1f77b4"
		baselineColor = "#d62728"
	)
	x := func(recall float64) float64 { return left + recall*plotW }
	y := func(precision float64) float64 { return top + (1-precision)*plotH }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	for i := 0; i <= 10; i++ {
		v := float64(i) / 10
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`, x(v), top, x(v), top+plotH)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left, y(v), left+plotW, y(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.1f</text>`, x(v), top+plotH+16, v)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.1f</text>`+"\n", left-6, y(v)+4, v)
	}
	// The target: precision ≥ 0.92 at recall ≥ 0.6.
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e6f5e6"/>`, x(0.6), y(1), x(1)-x(0.6), y(0.92)-y(1))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#2a7a2a">target</text>`+"\n", x(0.6)+4, y(0.92)-4)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, top, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">recall (failures predicted ≥ %s ahead)</text>`+"\n", x(0.5), h-12, minutes(r.MinLeadSeconds))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">precision (alarms followed by a failure within %s)</text>`+"\n", y(0.5), y(0.5), minutes(r.HorizonSeconds))
	fmt.Fprintf(&b, `<text x="%.1f" y="18" text-anchor="middle" font-weight="bold">GPU failure predictor: %.0f GPU-days, %d failures</text>`+"\n", x(0.5), r.GPUDays, r.Failures)
	b.WriteString(`<polyline fill="none" stroke="` + modelColor + `" stroke-width="2" points="`)
	for _, p := range r.Curve {
		fmt.Fprintf(&b, "%.1f,%.1f ", x(p.Recall), y(p.Precision))
	}
	b.WriteString(`"/>` + "\n")
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>`+"\n", x(r.Recall), y(r.Precision), modelColor)
	for _, p := range r.BaselineCurve {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s"/>`+"\n", x(p.Recall)-4, y(p.Precision)-4, baselineColor)
	}
	if o := r.PrecursorOnsetOracle; o != nil {
		fmt.Fprintf(&b, `<path d="M%.1f %.1f l6 6 l-6 6 l-6 -6 z" fill="#777"/>`+"\n", x(o.Recall), y(o.Precision)-6)
	}
	lx, ly := float64(left+plotW-290), float64(top+plotH-66)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`, lx, ly, lx+20, ly, modelColor)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">model (PR-AUC %.3f), dot: threshold %.3g</text>`+"\n", lx+26, ly+4, r.PRAUC, r.Threshold)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s"/>`, lx+6, ly+16, baselineColor)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">default rules: fatal only, any rule</text>`+"\n", lx+26, ly+24)
	fmt.Fprintf(&b, `<path d="M%.1f %.1f l6 6 l-6 6 l-6 -6 z" fill="#777"/>`, lx+10, ly+34)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">alarm from every precursor's onset</text>`+"\n", lx+26, ly+44)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func minutes(s int64) string { return fmt.Sprintf("%g min", float64(s)/60) }
