package agent

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuheal/gpuheal/internal/analyzer"
)

// healthMetrics exports the analyzer's last result: which problems are
// active, what each condition says, and how the rule configuration fares.
type healthMetrics struct {
	mu     sync.Mutex
	last   analyzer.Result
	view   string // what the series of last show, to tell a change
	engine *analyzer.Engine

	reloadErrors atomic.Uint64

	problem, condition, rules, reloads *prometheus.Desc
}

func newHealthMetrics(e *analyzer.Engine) *healthMetrics {
	return &healthMetrics{
		engine:    e,
		problem:   prometheus.NewDesc("gpuheal_problem_active", "1 for each active problem, by rule, GPU index (\"\" for the node) and severity.", []string{"rule", "gpu", "severity"}, nil),
		condition: prometheus.NewDesc("gpuheal_condition_status", "1 when the node condition the agent owns is True (healthy), 0 when False.", []string{"type"}, nil),
		rules:     prometheus.NewDesc("gpuheal_rules_loaded", "Health rules in the active rule set.", nil, nil),
		reloads:   prometheus.NewDesc("gpuheal_config_reload_errors_total", "Rule configurations rejected (the last good one stays active).", nil, nil),
	}
}

// set stores the result and reports whether the exported series change.
func (m *healthMetrics) set(r analyzer.Result) bool {
	var b strings.Builder
	for _, p := range r.Problems {
		gpu := -1
		if p.GPU != nil {
			gpu = p.GPU.Index
		}
		fmt.Fprintf(&b, "%s/%d/%s;", p.Rule, gpu, p.Severity)
	}
	for _, c := range r.Conditions {
		fmt.Fprintf(&b, "%s=%s;", c.Type, c.Status)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = r
	changed := b.String() != m.view
	m.view = b.String()
	return changed
}

func (m *healthMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.problem
	ch <- m.condition
	ch <- m.rules
	ch <- m.reloads
}

func (m *healthMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	r := m.last
	m.mu.Unlock()
	seen := map[[3]string]bool{}
	for _, p := range r.Problems {
		gpu := ""
		if p.GPU != nil {
			gpu = strconv.Itoa(p.GPU.Index)
		}
		k := [3]string{p.Rule, gpu, string(p.Severity)}
		if seen[k] { // one rule can be active per finding code on one GPU
			continue
		}
		seen[k] = true
		ch <- prometheus.MustNewConstMetric(m.problem, prometheus.GaugeValue, 1, k[0], k[1], k[2])
	}
	for _, c := range r.Conditions {
		v := 0.0
		if c.Status == analyzer.StatusTrue {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.condition, prometheus.GaugeValue, v, c.Type)
	}
	ch <- prometheus.MustNewConstMetric(m.rules, prometheus.GaugeValue, float64(m.engine.RuleSet().Len()))
	ch <- prometheus.MustNewConstMetric(m.reloads, prometheus.CounterValue, float64(m.reloadErrors.Load()))
}
