// Package dashboards holds gpuheal's Grafana dashboard (gpuheal-fleet.json)
// and Prometheus alerting rules (alerts.yaml, unit-tested by alerts_test.yaml).
// It has no Go API; its tests run promtool over the rules and the dashboard's
// queries and check that every metric they name is one gpuheal exports.
// docs/dashboards.md and docs/alerts.md describe them.
package dashboards
