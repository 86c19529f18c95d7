//go:build integration

package dashboards

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// grafanaVars stands in for the variables Grafana fills into queries.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "2m", "$__interval", "1m", "$__range", "1h",
	"${node}", ".*", "$node", ".*",
)

type dashQuery struct{ name, where, expr string }

// dashboardQueries returns every query of the dashboard as Prometheus
// would run it, plus the node variable's series.
func dashboardQueries(t *testing.T) []dashQuery {
	t.Helper()
	d := loadDashboard(t)
	var qs []dashQuery
	for _, p := range d.allPanels() {
		for _, q := range p.Targets {
			expr := grafanaVars.Replace(q.Expr)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q query %s: unknown variable in %q", p.Title, q.RefID, q.Expr)
			}
			qs = append(qs, dashQuery{fmt.Sprintf("panel_%d_%s", p.ID, q.RefID), fmt.Sprintf("panel %q query %s", p.Title, q.RefID), expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			qs = append(qs, dashQuery{"variable_" + v.Name, "variable " + v.Name, labelValuesMetric(t, v) + `{` + v.Name + `!=""}`})
		}
	}
	return qs
}

// TestDashboardQueries runs every dashboard query through Prometheus'
// own engine (promtool): each must parse, and each must return data from
// series shaped like the real ones — the agent's from the exporter's golden
// files, the rest from testdata/series.txt. An empty answer means a wrong
// label name or value. Each query becomes an alert on absent(query) that
// must stay silent.
func TestDashboardQueries(t *testing.T) {
	promtool(t)
	type alertRule struct {
		Alert  string            `json:"alert"`
		Expr   string            `json:"expr"`
		Labels map[string]string `json:"labels"`
	}
	type ruleTest struct {
		EvalTime  string `json:"eval_time"`
		Alertname string `json:"alertname"`
		ExpAlerts []any  `json:"exp_alerts"`
	}
	var rules []alertRule
	var tests []ruleTest
	for _, q := range dashboardQueries(t) {
		rules = append(rules, alertRule{q.name, "absent(" + q.expr + ")", map[string]string{"query": q.where}})
		tests = append(tests, ruleTest{"60m", q.name, []any{}})
	}
	dir := t.TempDir()
	writeYAML(t, filepath.Join(dir, "queries.yaml"), map[string]any{
		"groups": []any{map[string]any{"name": "dashboard", "rules": rules}},
	})
	writeYAML(t, filepath.Join(dir, "queries_test.yaml"), map[string]any{
		"rule_files":          []string{"queries.yaml"},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval":        "1m",
			"input_series":    inputSeries(t),
			"alert_rule_test": tests,
		}},
	})
	runPromtool(t, "check", "rules", filepath.Join(dir, "queries.yaml"))
	runPromtool(t, "test", "rules", filepath.Join(dir, "queries_test.yaml"))
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type series struct {
	Series string `json:"series"`
	Values string `json:"values"`
}

// inputSeries: two agents' real output as their scrape would label it, and
// the hand-written rest. Every series holds its value for an hour.
func inputSeries(t *testing.T) []series {
	t.Helper()
	golden := filepath.Join("..", "internal", "agent", "exporter", "testdata")
	out := agentSeries(t, filepath.Join(golden, "two_gpus.prom"), "gpu-a", "10.0.0.1:9400")
	out = append(out, agentSeries(t, filepath.Join(golden, "missing_gpu.prom"), "gpu-b", "10.0.0.2:9400")...)
	f, err := os.Open(filepath.Join("testdata", "series.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("testdata/series.txt:%d: want \"series values\"", n)
		}
		out = append(out, series{line[:i], line[i+1:]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// agentSeries turns an exporter golden file into input series with the
// target labels the scrape adds (docs/dashboards.md).
func agentSeries(t *testing.T, path, node, instance string) []series {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []series
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := []string{`job="gpuheal-agent"`, `instance="` + instance + `"`, `node="` + node + `"`}
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			var v float64
			switch mf.GetType().String() {
			case "GAUGE":
				v = m.GetGauge().GetValue()
			case "COUNTER":
				v = m.GetCounter().GetValue()
			default:
				t.Fatalf("%s: %s is a %s; only gauges and counters are handled", path, name, mf.GetType())
			}
			out = append(out, series{name + "{" + strings.Join(labels, ",") + "}", strconv.FormatFloat(v, 'f', -1, 64) + "+0x60"})
		}
	}
	slices.SortFunc(out, func(a, b series) int { return strings.Compare(a.Series, b.Series) })
	return out
}
