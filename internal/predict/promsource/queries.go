package promsource

import (
	"fmt"

	"github.com/prometheus/common/model"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// column indexes the values one slot has at each step of a chunk.
type column int

const (
	colMissing      column = iota
	colGauge0              // + predict.Gauge*
	colClock               = colGauge0 + predict.NumGauges
	colRecovery            = colClock + 1
	colPCIeGen             = colRecovery + 1
	colPCIeGenMax          = colPCIeGen + 1
	colPCIeWidth           = colPCIeGenMax + 1
	colPCIeWidthMax        = colPCIeWidth + 1
	colNVLinkUp            = colPCIeWidthMax + 1
	colNVLinkTotal         = colNVLinkUp + 1
	colRemapPending        = colNVLinkTotal + 1
	colRemapFailure        = colRemapPending + 1
	colCounter0            = colRemapFailure + 1 // + predict.Counter*
	numColumns             = colCounter0 + predict.NumCounters
	// colXid: the series' xid label says which code's total it is.
	colXid  column = -1
	colNone column = -2
)

// query is one range query and where its result series go.
type query struct {
	// metric is the exporter's metric the query reads; its raw series
	// count sizes the query's chunks.
	metric string
	expr   string
	route  func(model.Metric) column
}

// queries returns the range queries for one history. sel is the label
// matchers every selector carries (without braces); key the grouping
// labels that identify a GPU. Every expression aggregates by key so that
// duplicate series of one GPU (a restarted agent pod) collapse into one.
// Per-link series are summed as they are, assuming one series per link at
// a time (a restarted pod's old series end with stale markers; HA pairs
// need a deduplicating query layer such as Thanos in front): collapsing
// them per link first made the largest queries several times slower
// (docs/benchmarks.md, "Predictor").
func queries(sel, key string) []query {
	var qs []query
	one := func(metric string, c column) {
		qs = append(qs, query{metric: metric, expr: fmt.Sprintf("max by (%s) (%s{%s})", key, metric, sel),
			route: func(model.Metric) column { return c }})
	}
	byLabel := func(metric, label string, cols map[string]column) {
		qs = append(qs, query{metric: metric, expr: fmt.Sprintf("max by (%s, %s) (%s{%s})", key, label, metric, sel),
			route: func(m model.Metric) column { return lookup(cols, string(m[model.LabelName(label)])) }})
	}
	one("gpuheal_gpu_missing", colMissing)
	for i, m := range [predict.NumGauges]string{"utilization_percent", "memory_used_bytes", "temperature_celsius",
		"memory_temperature_celsius", "power_draw_watts", "sm_clock_hertz"} {
		one("gpuheal_gpu_"+m, colGauge0+column(i))
	}
	one("gpuheal_gpu_clock_event_reasons", colClock)
	one("gpuheal_gpu_recovery_action", colRecovery)
	byLabel("gpuheal_gpu_pcie_link_generation", "which", map[string]column{"current": colPCIeGen, "max": colPCIeGenMax})
	byLabel("gpuheal_gpu_pcie_link_width", "which", map[string]column{"current": colPCIeWidth, "max": colPCIeWidthMax})
	// Two aggregations beat one over an arithmetic expression: Prometheus
	// builds the whole intermediate matrix for the latter (5× slower).
	const up = "gpuheal_gpu_nvlink_up"
	for _, agg := range []struct {
		op string
		c  column
	}{{"sum", colNVLinkUp}, {"count", colNVLinkTotal}} {
		qs = append(qs, query{metric: up, expr: fmt.Sprintf("%s by (%s) (%s{%s})", agg.op, key, up, sel),
			route: func(model.Metric) column { return agg.c }})
	}
	byLabel("gpuheal_gpu_remapped_rows", "kind", map[string]column{
		"correctable":   colCounter0 + predict.CounterRemappedCorrectable,
		"uncorrectable": colCounter0 + predict.CounterRemappedUncorrectable})
	one("gpuheal_gpu_remapped_rows_pending", colRemapPending)
	one("gpuheal_gpu_remapped_rows_failure", colRemapFailure)
	const ecc = "gpuheal_gpu_ecc_errors_total"
	eccCols := map[string]column{
		"corrected/volatile":    colCounter0 + predict.CounterECCCorrected,
		"uncorrected/volatile":  colCounter0 + predict.CounterECCUncorrected,
		"corrected/aggregate":   colCounter0 + predict.CounterECCAggregateCorrected,
		"uncorrected/aggregate": colCounter0 + predict.CounterECCAggregateUncorrected,
	}
	qs = append(qs, query{metric: ecc, expr: fmt.Sprintf("max by (%s, type, scope) (%s{%s})", key, ecc, sel),
		route: func(m model.Metric) column { return lookup(eccCols, string(m["type"])+"/"+string(m["scope"])) }})
	one("gpuheal_gpu_pcie_replay_total", colCounter0+predict.CounterPCIeReplay)
	const nvl = "gpuheal_gpu_nvlink_errors_total"
	nvlCols := map[string]column{
		"crc_flit": colCounter0 + predict.CounterNVLinkCRCFlit, "crc_data": colCounter0 + predict.CounterNVLinkCRCData,
		"replay": colCounter0 + predict.CounterNVLinkReplay, "recovery": colCounter0 + predict.CounterNVLinkRecovery,
	}
	qs = append(qs, query{metric: nvl, expr: fmt.Sprintf("sum by (%s, type) (%s{%s})", key, nvl, sel),
		route: func(m model.Metric) column { return lookup(nvlCols, string(m["type"])) }})
	const xid = "gpuheal_gpu_xid_errors_total"
	qs = append(qs, query{metric: xid, expr: fmt.Sprintf("max by (%s, xid) (%s{%s})", key, xid, sel),
		route: func(model.Metric) column { return colXid }})
	return qs
}

func lookup(cols map[string]column, k string) column {
	if c, ok := cols[k]; ok {
		return c
	}
	return colNone // a label value this version does not know
}
