package fleetreport

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The chart's size and colours.
const (
	svgWidth    = 760
	svgHeight   = 470
	plotLeft    = 50
	plotRight   = svgWidth - 20
	colHardware = "#b2182b"
	colOther    = "#f4a582"
	colMTBI     = "#2166ac"
	colAxis     = "#444"
)

// SVG writes the report's chart, a self-contained SVG: incidents per day
// (hardware ones darker; each bar's tooltip names the day's nodes) and the
// distribution of the gaps between consecutive incidents of a machine.
// Every text from the records is escaped.
func SVG(w io.Writer, r *Report) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", svgWidth, svgHeight)
	perDayChart(&b, r, 30, 210)
	mtbiChart(&b, r, 270, 440)
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// perDayChart draws stacked bars between y top and bottom.
func perDayChart(b *bytes.Buffer, r *Report, top, bottom int) {
	title := "Incidents per day (UTC)"
	if n := len(r.PerDay); n > 0 {
		title += fmt.Sprintf(", %s to %s", r.PerDay[0].Day, r.PerDay[n-1].Day)
	}
	text(b, plotLeft, top-12, "start", "bold", title)
	legend(b, plotRight-140, top-22, colHardware, "hardware")
	legend(b, plotRight-60, top-22, colOther, "other")
	maxN := 1
	for _, d := range r.PerDay {
		maxN = max(maxN, d.Incidents)
	}
	axes(b, top, bottom, maxN)
	if len(r.PerDay) == 0 {
		text(b, (plotLeft+plotRight)/2, (top+bottom)/2, "middle", "", "no incidents")
		return
	}
	nodes := nodesPerDay(r)
	slot := float64(plotRight-plotLeft) / float64(len(r.PerDay))
	barW := max(slot*0.8, 0.5)
	scale := float64(bottom-top) / float64(maxN)
	every := max(1, (len(r.PerDay)+6)/7) // at most about 8 date labels
	for i, d := range r.PerDay {
		x := float64(plotLeft) + float64(i)*slot + (slot-barW)/2
		if d.Incidents > 0 {
			hw := float64(d.Hardware) * scale
			other := float64(d.Incidents-d.Hardware) * scale
			tip := fmt.Sprintf("%s: %d incidents, %d hardware; nodes: %s", d.Day, d.Incidents, d.Hardware, strings.Join(nodes[d.Day], ", "))
			fmt.Fprintf(b, `<g><title>%s</title>`, esc(tip))
			if hw > 0 {
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x, float64(bottom)-hw, barW, hw, colHardware)
			}
			if other > 0 {
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x, float64(bottom)-hw-other, barW, other, colOther)
			}
			b.WriteString("</g>\n")
		}
		if i%every == 0 || i == len(r.PerDay)-1 && i%every > every/2 {
			text(b, int(x+barW/2), bottom+14, "middle", "", d.Day[5:])
		}
	}
}

// mtbiChart draws the gap distribution between y top and bottom.
func mtbiChart(b *bytes.Buffer, r *Report, top, bottom int) {
	gaps := 0
	maxN := 1
	for _, bk := range r.MTBI {
		gaps += bk.Count
		maxN = max(maxN, bk.Count)
	}
	text(b, plotLeft, top-12, "start", "bold",
		fmt.Sprintf("Time between consecutive incidents of a machine (%d gaps; fleet MTBI %s)", gaps, Seconds(r.Fleet.MTBISeconds)))
	axes(b, top, bottom, maxN)
	if len(r.MTBI) == 0 {
		return
	}
	slot := float64(plotRight-plotLeft) / float64(len(r.MTBI))
	scale := float64(bottom-top) / float64(maxN)
	for i, bk := range r.MTBI {
		x := float64(plotLeft) + float64(i)*slot + slot*0.15
		h := float64(bk.Count) * scale
		fmt.Fprintf(b, `<g><title>%s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/></g>`+"\n",
			esc(fmt.Sprintf("%s: %d", bk.Label, bk.Count)), x, float64(bottom)-h, slot*0.7, h, colMTBI)
		if bk.Count > 0 {
			text(b, int(x+slot*0.35), int(float64(bottom)-h)-3, "middle", "", fmt.Sprint(bk.Count))
		}
		text(b, int(x+slot*0.35), bottom+14, "middle", "", bk.Label)
	}
}

// axes draws the y axis with 0, half and maxN, and the x axis.
func axes(b *bytes.Buffer, top, bottom, maxN int) {
	fmt.Fprintf(b, `<path d="M%d %dV%dH%d" stroke="%s" fill="none"/>`+"\n", plotLeft, top, bottom, plotRight, colAxis)
	ticks := []int{0, maxN}
	if maxN >= 4 {
		ticks = []int{0, maxN / 2, maxN}
	}
	for _, v := range slices.Compact(ticks) {
		y := bottom - v*(bottom-top)/maxN
		fmt.Fprintf(b, `<path d="M%d %dH%d" stroke="#ddd"/>`, plotLeft+1, y, plotRight)
		text(b, plotLeft-6, y+4, "end", "", fmt.Sprint(v))
	}
	b.WriteString("\n")
}

func legend(b *bytes.Buffer, x, y int, colour, label string) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/>`, x, y-9, colour)
	text(b, x+14, y, "start", "", label)
}

func text(b *bytes.Buffer, x, y int, anchor, weight, s string) {
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="%s"`, x, y, anchor)
	if weight != "" {
		fmt.Fprintf(b, ` font-weight="%s"`, weight)
	}
	fmt.Fprintf(b, `>%s</text>`+"\n", esc(s))
}

// nodesPerDay names the nodes of each day's incidents, sorted, once each.
func nodesPerDay(r *Report) map[string][]string {
	out := map[string][]string{}
	for i := range r.Incidents {
		d := r.Incidents[i].Detected.Format("2006-01-02")
		if !slices.Contains(out[d], r.Incidents[i].Node) {
			out[d] = append(out[d], r.Incidents[i].Node)
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// esc makes s safe as XML character data or an attribute value: the
// markup characters become references and characters XML cannot hold
// (control characters, invalid UTF-8) become U+FFFD.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
