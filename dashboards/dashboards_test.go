package dashboards

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const runbookBase = "https://github.com/gpuheal/gpuheal/blob/main/docs/alerts.md#"

type dashboard struct {
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Query      any            `json:"query"` // a string, or an object for query variables
	Definition string         `json:"definition"`
	Datasource *datasourceRef `json:"datasource"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	GridPos    struct {
		X int `json:"x"`
		W int `json:"w"`
	} `json:"gridPos"`
	Targets []target `json:"targets"`
	Panels  []panel  `json:"panels"` // a collapsed row keeps its panels here
}

type target struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *datasourceRef `json:"datasource"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

var promDatasource = datasourceRef{Type: "prometheus", UID: "${datasource}"}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("gpuheal-fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("gpuheal-fleet.json: %v", err)
	}
	return d
}

// allPanels flattens rows: top-level panels plus those inside collapsed rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	b, err := os.ReadFile("alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// TestAlertRulesMetadata: every alert has a severity, a summary and
// description, and a runbook link to its own section of docs/alerts.md.
func TestAlertRulesMetadata(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := regexp.MustCompile(`(?m)^## (\S+)\s*$`).FindAllStringSubmatch(string(doc), -1)
	var sections []string
	for _, h := range headings {
		sections = append(sections, h[1])
	}
	seen := map[string]bool{}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			t.Errorf("rule %q: not an alert; alerts.yaml holds alerts only", r.Expr)
			continue
		}
		if seen[r.Alert] {
			t.Errorf("alert %s is defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("alert %s: no %s annotation", r.Alert, a)
			}
		}
		if got, want := r.Annotations["runbook_url"], runbookBase+strings.ToLower(r.Alert); got != want {
			t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, got, want)
		}
		if !slices.Contains(sections, r.Alert) {
			t.Errorf("alert %s: docs/alerts.md has no section \"## %s\" (its runbook anchor)", r.Alert, r.Alert)
		}
	}
}

// TestAlertRulesTestedBothWays: alerts_test.yaml evaluates every alert at
// least once where it must fire and once where it must not.
func TestAlertRulesTestedBothWays(t *testing.T) {
	b, err := os.ReadFile("alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("alerts_test.yaml: %v", err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, r := range loadRules(t) {
		if !fires[r.Alert] {
			t.Errorf("alerts_test.yaml never expects %s to fire", r.Alert)
		}
		if !silent[r.Alert] {
			t.Errorf("alerts_test.yaml never expects %s to stay silent", r.Alert)
		}
	}
}

func TestDashboardPanels(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" {
		t.Error("dashboard has no uid")
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v := vars["datasource"]; v.Type != "datasource" || v.Query != "prometheus" {
		t.Errorf("variable datasource: type %q query %v, want a prometheus datasource variable", v.Type, v.Query)
	}
	if v := vars["node"]; v.Type != "query" || v.Datasource == nil || *v.Datasource != promDatasource {
		t.Errorf("variable node: type %q datasource %v, want a query on %v", v.Type, v.Datasource, promDatasource)
	}
	ids := map[int]string{}
	for _, p := range d.allPanels() {
		if p.Title == "" {
			t.Errorf("panel %d (%s) has no title", p.ID, p.Type)
		}
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos x=%d w=%d outside the 24 columns", p.Title, p.GridPos.X, p.GridPos.W)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || *p.Datasource != promDatasource {
			t.Errorf("panel %q: datasource %v, want %v", p.Title, p.Datasource, promDatasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q query %s: empty expr", p.Title, q.RefID)
			}
			if q.RefID == "" || refs[q.RefID] {
				t.Errorf("panel %q: refId %q missing or repeated", p.Title, q.RefID)
			}
			refs[q.RefID] = true
			if q.Datasource != nil && *q.Datasource != promDatasource {
				t.Errorf("panel %q query %s: datasource %v, want %v", p.Title, q.RefID, q.Datasource, promDatasource)
			}
		}
	}
}
