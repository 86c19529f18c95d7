package dashboards

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// outsideMetrics are the series the rules and the dashboard use that
// gpuheal does not export, with who does.
var outsideMetrics = map[string]string{
	"up":                         "Prometheus, for every scrape target",
	"kube_node_status_condition": "kube-state-metrics",
	"kube_node_spec_taint":       "kube-state-metrics",
}

var metricName = regexp.MustCompile(`^gpuheal_[a-z0-9_]*[a-z0-9]$`)

// exportedMetrics scans the non-test Go source under internal/ and cmd/
// for the names of the metrics gpuheal exports: string literals that are
// whole names, and names put together by a builder function, as the agent's
// exporter does (desc := func(name, ...) { NewDesc("gpuheal_"+name ...) },
// g := func(name, ...) { desc("gpu_"+name ...) }, then g("info", ...)).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			scanFile(f, names)
			return nil
		})
		if err != nil {
			t.Fatalf("scanning ../%s: %v", dir, err)
		}
	}
	return names
}

func scanFile(f *ast.File, names map[string]bool) {
	// Builders: local func literals whose first parameter is appended to a
	// literal prefix. prefix[fn] is what fn puts before its argument.
	builders := map[string]*ast.FuncLit{}
	ast.Inspect(f, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && len(a.Lhs) == 1 && len(a.Rhs) == 1 {
			id, isID := a.Lhs[0].(*ast.Ident)
			fl, isFn := a.Rhs[0].(*ast.FuncLit)
			if isID && isFn && len(fl.Type.Params.List) > 0 && len(fl.Type.Params.List[0].Names) > 0 {
				builders[id.Name] = fl
			}
		}
		if s := stringLit(n); metricName.MatchString(s) {
			names[s] = true
		}
		return true
	})
	prefix := map[string]string{}
	for changed := true; changed; {
		changed = false
		for name, fl := range builders {
			if _, done := prefix[name]; done {
				continue
			}
			param := fl.Type.Params.List[0].Names[0].Name
			ast.Inspect(fl.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				b, ok := call.Args[0].(*ast.BinaryExpr)
				if !ok || b.Op != token.ADD || !isIdent(b.Y, param) {
					return true
				}
				lit := stringLit(b.X)
				if callee, ok := call.Fun.(*ast.Ident); ok {
					if p, known := prefix[callee.Name]; known {
						prefix[name], changed = p+lit, true
					}
				} else if strings.HasPrefix(lit, "gpuheal_") {
					prefix[name], changed = lit, true
				}
				return true
			})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && len(call.Args) > 0 {
			if callee, ok := call.Fun.(*ast.Ident); ok {
				if p, known := prefix[callee.Name]; known {
					if s := p + stringLit(call.Args[0]); metricName.MatchString(s) {
						names[s] = true
					}
				}
			}
		}
		return true
	})
}

func stringLit(n ast.Node) string {
	if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
		if s, err := strconv.Unquote(l.Value); err == nil {
			return s
		}
	}
	return ""
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// exported reports whether name is a gpuheal metric or one of a gpuheal
// histogram's series.
func exported(names map[string]bool, name string) bool {
	if names[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

// TestScannerFindsDocumentedMetrics keeps the scanner honest: every metric
// named in the tables of docs/metrics.md must turn up in the source (so a
// scanner that finds too little, or a doc that promises a metric the code
// lost, fails here).
func TestScannerFindsDocumentedMetrics(t *testing.T) {
	names := exportedMetrics(t)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := regexp.MustCompile("(?m)^\\| `(gpuheal_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(documented) < 40 {
		t.Fatalf("found only %d metrics in the tables of docs/metrics.md; has its format changed?", len(documented))
	}
	for _, m := range documented {
		if !names[m[1]] {
			t.Errorf("docs/metrics.md documents %s, but no Go source under internal/ or cmd/ exports it", m[1])
		}
	}
}

// TestQueriesUseExportedMetrics: a metric renamed in the code, or misspelt
// in a query, fails here.
func TestQueriesUseExportedMetrics(t *testing.T) {
	names := exportedMetrics(t)
	check := func(where, expr string) {
		t.Helper()
		ms := metricNames(expr)
		if len(ms) == 0 {
			t.Errorf("%s: no metric found in %q", where, expr)
		}
		for _, m := range ms {
			if _, outside := outsideMetrics[m]; !outside && !exported(names, m) {
				t.Errorf("%s: metric %s is neither exported by gpuheal nor in outsideMetrics", where, m)
			}
		}
	}
	for _, r := range loadRules(t) {
		check("alert "+r.Alert, r.Expr)
	}
	d := loadDashboard(t)
	for _, p := range d.allPanels() {
		for _, q := range p.Targets {
			check("panel "+strconv.Quote(p.Title)+" query "+q.RefID, q.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			check("variable "+v.Name, labelValuesMetric(t, v))
		}
	}
}

// labelValuesMetric returns the series selector of a label_values(metric,
// label) variable query.
func labelValuesMetric(t *testing.T, v variable) string {
	t.Helper()
	m := regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`).FindStringSubmatch(v.Definition)
	if m == nil {
		t.Fatalf("variable %s: definition %q is not label_values(metric, label)", v.Name, v.Definition)
	}
	return m[1]
}

func TestMetricNames(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{`up{job=~".*gpuheal-agent.*"} == 0`, []string{"up"}},
		{`sum by (node, gpu) (rate(gpuheal_gpu_ecc_errors_total{type="corrected",node=~"$node"}[$__rate_interval]))`, []string{"gpuheal_gpu_ecc_errors_total"}},
		{`histogram_quantile(0.95, sum by (phase, le) (increase(x_bucket[1h]))) > 1e3`, []string{"x_bucket"}},
		{`a - ignoring (state) b{state="found"} unless on (node) c offset 1d`, []string{"a", "b", "c"}},
		{`count(a == 0) or vector(0)`, []string{"a"}},
		{`sum(x) without (by) / on() group_left (on) y and time() - z`, []string{"x", "y", "z"}},
		{`label_replace(a, "dst", "$1", "src", "(.*)") * 0x1F`, []string{"a"}},
		{`topk(10, a:recorded:rate5m)`, []string{"a:recorded:rate5m"}},
	} {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
