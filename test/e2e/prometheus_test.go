package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPrometheusScrapesAndPushgatewayReceivesAgent runs the agent on the sim
// backend, a real Prometheus scraping it and a real Pushgateway the agent
// pushes to (which Prometheus scrapes too), and reads both paths back
// through Prometheus' HTTP API.
func TestPrometheusScrapesAndPushgatewayReceivesAgent(t *testing.T) {
	prom := requireTool(t, "prometheus")
	pushgw := requireTool(t, "prometheus-pushgateway")
	agentBin := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")

	agentPort, promPort, pgPort := freePort(t), freePort(t), freePort(t)
	startProcess(t, pushgw, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", pgPort))
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/-/ready", pgPort), 30*time.Second)

	startProcess(t, agentBin, "--standalone", "--gpu-backend=sim", "--sim-gpus=8", "--node-name=sim-node-1",
		"--interval=1s", "--call-timeout=500ms", "--kmsg-path=",
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", agentPort),
		fmt.Sprintf("--push-gateway=http://127.0.0.1:%d", pgPort), "--push-interval=1s")
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", agentPort), 30*time.Second)

	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gpuheal-agent
    static_configs:
      - targets: ["127.0.0.1:%d"]
        labels: {node: sim-node-1}
  - job_name: pushgateway
    honor_labels: true
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, agentPort, pgPort)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, prom, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	waitHTTP(t, promURL+"/-/ready", 60*time.Second)

	// Scraped directly: the node label comes from the target, not from us.
	scraped := waitForSeries(t, promURL, `gpuheal_gpu_temperature_celsius{job="gpuheal-agent",node="sim-node-1",gpu="3"}`, time.Minute)
	if scraped["pci_bus_id"] == "" || scraped["uuid"] == "" || scraped["model"] == "" {
		t.Errorf("scraped series lacks GPU labels: %v", scraped)
	}
	// Pushed: the Pushgateway keeps the job and instance we pushed under.
	pushed := waitForSeries(t, promURL, `gpuheal_gpu_temperature_celsius{job="gpuheal-agent",instance="sim-node-1",gpu="3"}`, time.Minute)
	if pushed["uuid"] != scraped["uuid"] {
		t.Errorf("pushed uuid %q differs from scraped uuid %q", pushed["uuid"], scraped["uuid"])
	}
}

// waitForSeries polls an instant query until it returns one sample with a
// plausible value, and returns its labels.
func waitForSeries(t *testing.T, promURL, query string, within time.Duration) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(query))
		if err == nil {
			var body struct {
				Status string `json:"status"`
				Data   struct {
					Result []struct {
						Metric map[string]string `json:"metric"`
						Value  [2]any            `json:"value"`
					} `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err == nil && len(body.Data.Result) == 1 {
				var v float64
				fmt.Sscan(fmt.Sprint(body.Data.Result[0].Value[1]), &v)
				if v < 20 || v > 100 {
					t.Fatalf("%s = %v °C, not a plausible GPU temperature", query, v)
				}
				return body.Data.Result[0].Metric
			}
			last = fmt.Sprintf("status %s, %d results, err %v", body.Status, len(body.Data.Result), err)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("query %s: no series within %v (last: %s)", query, within, last)
		case <-tick.C:
		}
	}
}
