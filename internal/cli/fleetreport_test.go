package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/sqlite"
	"github.com/gpuheal/gpuheal/internal/fleetreport"
	fx "github.com/gpuheal/gpuheal/internal/fleetreport/fleetreporttest"
	"github.com/gpuheal/gpuheal/internal/score"
)

var updateFleetReport = flag.Bool("update-fleet-report", false, "rewrite testdata/fleet-report.txt")

// fleetReportDB writes recs to a new SQLite audit store, as the
// controller's store writes them, and returns its path.
func fleetReportDB(t *testing.T, recs []audit.Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// fleetReportCluster holds the fixture's Nodes, labelled as EKS labels
// them, and a CPU node that has no incident.
func fleetReportCluster(t *testing.T) client.Client {
	t.Helper()
	objs := []client.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-only"}}}
	for _, n := range fx.ClusterNodes() {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{
			gpuhealv1.LabelInstanceType: n.InstanceType, gpuhealv1.LabelZone: n.Zone,
			gpuhealv1.LabelNvidiaGPUCount: strconv.Itoa(n.GPUs),
		}}})
	}
	return fakeCluster(t, objs...)
}

// fixtureReport is the report Build makes of the fixture, what every
// output of the command must show.
func fixtureReport(t *testing.T, nodes map[string]fleetreport.NodeInfo) fleetreport.Report {
	t.Helper()
	r, err := fleetreport.Build(fx.Records(fx.Specs()), nodes, fx.Now,
		fleetreport.Options{Since: fx.Now.Add(-30 * fx.Day), Lemon: score.DefaultLemonRule()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fixtureNodes() map[string]fleetreport.NodeInfo {
	out := map[string]fleetreport.NodeInfo{}
	for _, n := range fx.ClusterNodes() {
		out[n.Name] = fleetreport.NodeInfo{InstanceType: n.InstanceType, Zone: n.Zone, GPUs: n.GPUs}
	}
	return out
}

var until = fx.Now.Format(time.RFC3339)

// TestFleetReportEndToEnd: the fixture through a real SQLite store and
// the command, with the Nodes' labels from the cluster, in each output.
func TestFleetReportEndToEnd(t *testing.T) {
	db := fleetReportDB(t, fx.Records(fx.Specs()))
	run := fakeRunner(t, fleetReportCluster(t))
	want := fixtureReport(t, fixtureNodes())
	svgFile := filepath.Join(t.TempDir(), "chart.svg")

	out, code := run("fleet", "report", "--audit-db", db, "--until", until, "-o", "json", "--svg", svgFile)
	var got fleetreport.Report
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("json report (-want +got):\n%s", diff)
	}
	var wantSVG bytes.Buffer
	if err := fleetreport.SVG(&wantSVG, &want); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(svgFile); err != nil || string(b) != wantSVG.String() {
		t.Errorf("--svg wrote %v:\n%s\nwant:\n%s", err, b, wantSVG.String())
	}

	out, code = run("fleet", "report", "--audit-db", db, "--until", until)
	golden := filepath.Join("testdata", "fleet-report.txt")
	if *updateFleetReport {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantTable, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wantTable), out); code != 0 || diff != "" {
		t.Errorf("table: exit %d (-want +got):\n%s", code, diff)
	}

	out, code = run("fleet", "report", "--audit-db", db, "--until", until, "-o", "html")
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, wantSVG.String()) ||
		!strings.Contains(out, `<tr class="lemon"><td>uuid-b</td>`) {
		t.Errorf("html: exit %d, want the page with the chart and the lemon:\n%s", code, out)
	}
}

// TestFleetReportNodeInfo: where instance types and zones come from.
func TestFleetReportNodeInfo(t *testing.T) {
	db := fleetReportDB(t, fx.Records(fx.Specs()))
	down := func(args ...string) (string, int) {
		k := newCluster()
		k.connect = func() (client.Client, error) { return nil, errors.New("no route to the API server") }
		return runTree(t, k, "", args...)
	}
	types := func(run runner, args ...string) ([]string, int, string) {
		out, code := run(append([]string{"fleet", "report", "--audit-db", db, "--until", until, "-o", "json"}, args...)...)
		var r fleetreport.Report
		_ = json.Unmarshal([]byte(out), &r)
		var names []string
		for _, g := range r.InstanceTypes {
			names = append(names, g.Name)
		}
		return names, code, out
	}
	up := fakeRunner(t, fleetReportCluster(t))
	tests := []struct {
		name string
		run  runner
		args []string
		want []string
		code int
	}{
		{"auto, the cluster answers", up, nil, []string{"p5.48xlarge", "unknown", "p4d.24xlarge"}, 0},
		{"none never asks", up, []string{"--node-info", "none"}, []string{"unknown"}, 0},
		{"auto, the cluster is down: unknown", down, nil, []string{"unknown"}, 0},
		{"cluster, the cluster is down: an error", down, []string{"--node-info", "cluster"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, code, out := types(tt.run, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, out)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("instance types (-want +got):\n%s", diff)
			}
			if code != 0 && !strings.Contains(out, "--node-info cluster: no route to the API server") {
				t.Errorf("error %q does not say why", out)
			}
		})
	}

	// Without labels, --gpus-per-node makes the whole-node GPU-hours known.
	out, code := down("fleet", "report", "--audit-db", db, "--until", until, "--node-info", "none", "--gpus-per-node", "8", "-o", "json")
	var r fleetreport.Report
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Fleet.GPUHoursUnknown != 0 || r.NodeInfo != "none" {
		t.Errorf("--gpus-per-node 8: exit %d, %v, fleet %+v", code, err, r.Fleet)
	}
}

// TestFleetReportWindows: --since, --until and the lemon flags.
func TestFleetReportWindows(t *testing.T) {
	db := fleetReportDB(t, fx.Records(fx.Specs()))
	run := fakeRunner(t, fleetReportCluster(t))
	tests := []struct {
		args      []string
		incidents int
		lemons    []string
	}{
		{nil, 10, []string{"uuid-b"}},
		{[]string{"--since", "0"}, 11, []string{"uuid-b"}},
		{[]string{"--since", "2d"}, 4, []string{"uuid-b"}},
		{[]string{"--since", "2026-12-01T00:00:00Z"}, 6, []string{"uuid-b"}},
		{[]string{"--lemon-incidents", "2"}, 10, []string{"uuid-a1", "uuid-b", "uuid-c"}},
		{[]string{"--lemon-incidents", "2", "--lemon-window", "1w"}, 10, []string{"uuid-c"}},
		// A week earlier: b3, a3, d2, x1 and c2 had not happened, c1 not
		// yet; --since counts back from --until.
		{[]string{"--until", fx.Now.Add(-7 * fx.Day).Format(time.RFC3339), "--since", "30d"}, 4, []string{}},
	}
	for _, tt := range tests {
		args := append([]string{"fleet", "report", "--audit-db", db, "--until", until, "-o", "json"}, tt.args...)
		out, code := run(args...)
		var r fleetreport.Report
		if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
			t.Fatalf("%v: exit %d, %v:\n%s", tt.args, code, err, out)
		}
		lemons := []string{}
		for _, l := range r.Lemons {
			lemons = append(lemons, l.Machine)
		}
		if r.Fleet.Incidents != tt.incidents || !cmp.Equal(lemons, tt.lemons) {
			t.Errorf("%v: %d incidents, lemons %v; want %d, %v", tt.args, r.Fleet.Incidents, lemons, tt.incidents, tt.lemons)
		}
	}
}

// TestFleetReportEscapes: a node name from the audit log holding markup
// and terminal escapes stays text in every output.
func TestFleetReportEscapes(t *testing.T) {
	evil := "<script>alert(1)</script>\x1b]0;pwned\x07\tx"
	specs := []fx.Spec{{ID: "e-1", Node: evil, Machine: evil, Detected: fx.Day, Reason: evil, Action: "Reboot",
		Outcome: audit.Succeeded, Lasted: time.Minute}}
	db := fleetReportDB(t, fx.Records(specs))
	svgFile := filepath.Join(t.TempDir(), "chart.svg")
	run := fakeRunner(t, fleetReportCluster(t))
	for _, o := range []string{"table", "html"} {
		out, code := run("fleet", "report", "--audit-db", db, "--until", until, "-o", o, "--svg", svgFile)
		// Markup is harmless on a terminal, not in a page; escapes the other way round.
		if code != 0 || o == "html" && strings.Contains(out, "<script>") || strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("-o %s: exit %d, the record's markup or escapes reached the output:\n%q", o, code, out)
		}
	}
	b, err := os.ReadFile(svgFile)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "script" {
			t.Fatal("the SVG has a script element")
		}
	}
}

func TestFleetReportBadFlags(t *testing.T) {
	db := fleetReportDB(t, fx.Records(fx.Specs()))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-o", "yaml"}, `--output (-o) "yaml": want one of table, json, html`},
		{[]string{"--since", "3x"}, `--since "3x": want a duration back from now (30d, 12h, 1w) or an RFC 3339 time, or 0 for all history`},
		{[]string{"--since", "-1d"}, `--since "-1d"`},
		{[]string{"--until", "yesterday"}, `--until "yesterday"`},
		{[]string{"--lemon-window", "5q"}, `--lemon-window "5q": want a duration such as 30d, 2w or 720h`},
		{[]string{"--lemon-incidents", "1"}, "--lemon-incidents 1 --lemon-window 30d: incidents 1: a lemon needs at least 2"},
		{[]string{"--lemon-window", "0s"}, "window 0s: must be positive"},
		{[]string{"--node-info", "maybe"}, `--node-info "maybe": want auto, cluster or none`},
		{[]string{"--gpus-per-node", "-8"}, "--gpus-per-node -8: must not be negative"},
		{[]string{"--svg", filepath.Join(t.TempDir(), "no", "such", "dir.svg")}, "--svg: open"},
		{[]string{"--controller-url", "http://x"}, "at most one of"},
		{[]string{"extra"}, `unknown command "extra"`},
	}
	run := fakeRunner(t, fleetReportCluster(t))
	for _, tt := range tests {
		args := append([]string{"fleet", "report", "--audit-db", db, "--node-info", "none"}, tt.args...)
		out, code := run(args...)
		if code == 0 || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d %q, want an error naming %s", tt.args, code, out, tt.want)
		}
	}
	out, code := run("fleet", "report", "--audit-db", filepath.Join(t.TempDir(), "none.db"))
	if code == 0 || !strings.Contains(out, "none.db") {
		t.Errorf("a missing store: exit %d %q", code, out)
	}
}

// FuzzFleetReportSince: --since never panics, and a time it accepts is
// the zero time (0) or not after now.
func FuzzFleetReportSince(f *testing.F) {
	for _, s := range []string{"0", "30d", "1w", "36h", "1d12h", "2026-11-01T00:00:00Z", "-1d", "", "3x", "0s", "9999999999y"} {
		f.Add(s)
	}
	now := fx.Now
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSince(s, now)
		if err == nil && !got.IsZero() && got.After(now) && !strings.Contains(s, "T") {
			t.Errorf("parseSince(%q) = %s, after now %s", s, got, now)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "--since ") {
			t.Errorf("parseSince(%q): error %q does not name the flag", s, err)
		}
	})
}

// FuzzFleetReportLemonWindow: the lemon flags never panic and never give
// a rule the controller would refuse.
func FuzzFleetReportLemonWindow(f *testing.F) {
	for _, s := range []string{"30d", "2w", "720h", "0s", "", "5q", "1y2w3d", "-1d"} {
		f.Add(3, s)
	}
	f.Fuzz(func(t *testing.T, n int, s string) {
		rule, err := parseLemonRule(n, s)
		if err == nil && rule.Validate() != nil {
			t.Errorf("parseLemonRule(%d, %q) = %+v, which the rule refuses", n, s, rule)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "--lemon-") {
			t.Errorf("parseLemonRule(%d, %q): error %q does not name the flag", n, s, err)
		}
	})
}
