package fleetreport

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

// HTML writes the report as one self-contained page, the chart embedded.
// html/template escapes every text from the records; the chart is SVG's
// own escaped output.
func HTML(w io.Writer, r *Report) error {
	var svg bytes.Buffer
	if err := SVG(&svg, r); err != nil {
		return err
	}
	var b bytes.Buffer
	err := page.Execute(&b, struct {
		*Report
		Chart template.HTML
	}{r, template.HTML(svg.String())}) //nolint:gosec // SVG escapes every text it writes (TestOutputsEscapeRecords)
	if err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	// html/template leaves control characters in text, harmless to a
	// browser but not to whoever opens the file in a terminal; the page's
	// own markup has none.
	_, err = w.Write(bytes.Map(func(c rune) rune {
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
			return '\uFFFD'
		}
		return c
	}, b.Bytes()))
	return err
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"dur":     Seconds,
	"hours":   GPUHours,
	"time":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") },
	"join":    func(s []string) string { return strings.Join(s, ", ") },
	"section": section,
	"num": func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", *v)
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>gpuheal fleet report</title>
<style>
body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border-bottom:1px solid #ddd;padding:3px 10px;text-align:left;vertical-align:top}
td.n{text-align:right}
.lemon{color:#b2182b}
</style></head><body>
<h1>Fleet reliability report</h1>
<p>Generated {{time .Generated}}; period {{with .Since}}from {{time .}}{{else}}all history{{end}}.
{{.Fleet.Incidents}} incidents ({{.Fleet.Hardware}} hardware, {{.Fleet.Open}} open) on {{len .Nodes}} nodes and {{len .Machines}} machines;
MTBI {{dur .Fleet.MTBISeconds}}, MTTR {{dur .Fleet.MTTRSeconds}}, GPU-hours lost {{hours .Fleet}}.
{{if eq .NodeInfo "none"}}Instance types and zones were not read from the cluster.{{end}}</p>
{{.Chart}}
<h2>Lemons</h2>
<p>The controller's rule: {{.LemonRule.Incidents}} hardware incidents of a machine, or of one GPU, within {{.LemonRule.Window}}.</p>
{{if .Lemons}}<table><tr><th>machine</th><th>GPU</th><th>nodes</th><th>evidence</th></tr>
{{range .Lemons}}<tr class="lemon"><td>{{.Machine}}</td><td>{{or .GPU "whole machine"}}</td><td>{{join .Nodes}}</td><td>
{{range .Evidence}}{{time .Time}} {{.Incident}} on {{.Node}}: {{.Class}}{{with .Action}} ({{.}}){{end}}{{with .Reason}} — {{.}}{{end}}<br>
{{end}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
{{template "groups" (section "Nodes" .Nodes)}}
{{template "groups" (section "Machines" .Machines)}}
{{template "groups" (section "Instance types" .InstanceTypes)}}
{{template "groups" (section "Zones" .Zones)}}
<h2>Incidents</h2>
{{if .Incidents}}<table><tr><th>detected</th><th>incident</th><th>node</th><th>machine</th><th>action</th><th>class</th><th>outcome</th><th>recovered in</th><th>GPU-hours</th><th>reason</th></tr>
{{range .Incidents}}<tr><td>{{time .Detected}}</td><td>{{.ID}}</td><td>{{.Node}}</td><td>{{.Machine}}</td><td>{{.Action}}</td><td>{{.Class}}</td><td>{{or .Outcome "open"}}</td><td class="n">{{dur .RecoverSeconds}}</td><td class="n">{{num .GPUHoursLost}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
</body></html>
{{define "groups"}}<h2>{{.Title}}</h2>
{{if .Groups}}<table><tr><th>name</th><th>incidents</th><th>hardware</th><th>open</th><th>MTBI</th><th>MTTR</th><th>GPU-hours lost</th><th>also</th></tr>
{{range .Groups}}<tr><td>{{.Name}}</td><td class="n">{{.Incidents}}</td><td class="n">{{.Hardware}}</td><td class="n">{{.Open}}</td><td class="n">{{dur .MTBISeconds}}</td><td class="n">{{dur .MTTRSeconds}}</td><td class="n">{{hours .}}</td><td>{{with .Nodes}}names: {{join .}}{{end}}{{with .Machines}}machines: {{join .}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}{{end}}`))

// section pairs a table's title with its rows for the "groups" template.
func section(title string, g []Group) any {
	return struct {
		Title  string
		Groups []Group
	}{title, g}
}

// GPUHours writes a group's GPU-hours lost: "12.5", "12.5+" when some of
// its incidents' GPU counts are unknown, "-" when none is known.
func GPUHours(g Group) string {
	if g.GPUHoursLost == nil {
		return "-"
	}
	s := fmt.Sprintf("%.1f", *g.GPUHoursLost)
	if g.GPUHoursUnknown > 0 {
		s += "+"
	}
	return s
}
