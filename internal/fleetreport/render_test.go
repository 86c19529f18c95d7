package fleetreport_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/fleetreport"
	fx "github.com/gpuheal/gpuheal/internal/fleetreport/fleetreporttest"
)

var update = flag.Bool("update", false, "rewrite testdata/fixture.svg")

// wellFormed parses doc as XML to its end and returns the element names.
func wellFormed(t *testing.T, doc []byte) []string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var names []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			names = append(names, se.Name.Local)
		}
	}
}

// TestSVGGolden: the fixture's chart, compared whole (go test -update
// rewrites it; look at it in a browser before committing).
func TestSVGGolden(t *testing.T) {
	r, err := fleetreport.Build(fx.Records(fx.Specs()), clusterNodes(), fx.Now, defaults(30*fx.Day))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := fleetreport.SVG(&b, &r); err != nil {
		t.Fatal(err)
	}
	wellFormed(t, b.Bytes())
	golden := filepath.Join("testdata", "fixture.svg")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("SVG (-want +got):\n%s", diff)
	}
	for _, s := range []string{"Incidents per day (UTC), 2026-11-07 to 2026-12-07", "2026-12-06: 2 incidents, 1 hardware; nodes: gpu-a, gpu-d",
		"Time between consecutive incidents of a machine (5 gaps; fleet MTBI 2d18h)", ">7d–30d<"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("SVG lacks %q", s)
		}
	}
}

// TestOutputsEscapeRecords: records are outside input; a node, machine,
// GPU or reason holding markup or control characters stays text in the
// SVG and the HTML page.
func TestOutputsEscapeRecords(t *testing.T) {
	evil := `<script>alert("x")</script>&`
	specs := []fx.Spec{
		{ID: "i-1" + evil, Node: "n" + evil, Machine: "m\x00\x1b[31m" + evil, Detected: 3 * fx.Day, Reason: "r" + evil,
			Action: "Reboot", GPUs: []string{"GPU-" + evil}, Outcome: "Succeeded", Lasted: time.Minute},
		{ID: "i-2", Node: "n" + evil, Machine: "m\x00\x1b[31m" + evil, Detected: 2 * fx.Day, Reason: "r\xff" + evil,
			Action: "Reboot", Outcome: "Succeeded", Lasted: time.Minute},
		{ID: "i-3", Node: "n" + evil, Machine: "m\x00\x1b[31m" + evil, Detected: fx.Day, Reason: "r" + evil,
			Action: "Reboot", Outcome: "Succeeded", Lasted: time.Minute},
	}
	nodes := map[string]fleetreport.NodeInfo{"n" + evil: {InstanceType: "t" + evil, Zone: "z" + evil, GPUs: 8}}
	r, err := fleetreport.Build(fx.Records(specs), nodes, fx.Now, defaults(7*fx.Day))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Lemons) != 1 {
		t.Fatalf("lemons = %+v, want the evil machine", r.Lemons)
	}
	var svg, page bytes.Buffer
	if err := fleetreport.SVG(&svg, &r); err != nil {
		t.Fatal(err)
	}
	if err := fleetreport.HTML(&page, &r); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"svg": svg.String(), "html": page.String()} {
		if strings.Contains(doc, "<script") || strings.Contains(doc, "\x00") || strings.Contains(doc, "\x1b") {
			t.Errorf("%s holds the records' markup or control characters:\n%s", name, doc)
		}
		if !strings.Contains(doc, "&lt;script&gt;") {
			t.Errorf("%s does not show the node's name as text:\n%s", name, doc)
		}
	}
	if got := wellFormed(t, svg.Bytes()); strings.Contains(strings.Join(got, " "), "script") {
		t.Errorf("SVG elements %v", got)
	}
}

// TestHTMLEmbedsTheChart: one page, the chart in it, the lemon and every
// table.
func TestHTMLEmbedsTheChart(t *testing.T) {
	r, err := fleetreport.Build(fx.Records(fx.Specs()), clusterNodes(), fx.Now, defaults(30*fx.Day))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := fleetreport.HTML(&b, &r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, s := range []string{"<!DOCTYPE html>", `<svg xmlns="http://www.w3.org/2000/svg"`, "<h2>Lemons</h2>",
		`<tr class="lemon"><td>uuid-b</td><td>whole machine</td><td>gpu-b, gpu-e</td>`,
		"2026-12-04 12:00 UTC gpu-e-0001 on gpu-e: reset-gpu (ResetGPU) — NvidiaXID94Error",
		"<h2>Machines</h2>", "<h2>Instance types</h2>", "<h2>Zones</h2>", "names: gpu-b, gpu-e", "machines: uuid-a1, uuid-a2",
		"10 incidents (9 hardware, 1 open) on 5 nodes and 5 machines", "GPU-hours lost 72.5&#43;"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}
