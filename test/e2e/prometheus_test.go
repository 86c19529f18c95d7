//go:build integration

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

	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestPrometheusScrapesAndPushgatewayReceivesAgent runs the agent on the sim
// backend, a real Prometheus scraping it and a real Pushgateway the agent
// pushes to (which Prometheus scrapes too), and reads both paths back
// through Prometheus' HTTP API.
func TestPrometheusScrapesAndPushgatewayReceivesAgent(t *testing.T) {
	t.Parallel()
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
	var labels map[string]string
	testproc.Eventually(t, within, "a series for "+query, func(ctx context.Context) (bool, error) {
		metric, v, err := instantQuery(ctx, promURL, query)
		if err != nil {
			return false, err
		}
		if v < 20 || v > 100 {
			t.Fatalf("%s = %v °C, not a plausible GPU temperature", query, v)
		}
		labels = metric
		return true, nil
	})
	return labels
}

// instantQuery runs query and returns its one sample.
func instantQuery(ctx context.Context, promURL, query string) (map[string]string, float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, promURL+"/api/v1/query?query="+url.QueryEscape(query), nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, 0, fmt.Errorf("decoding the answer: %w", err)
	}
	if len(body.Data.Result) != 1 {
		return nil, 0, fmt.Errorf("status %s, %d results", body.Status, len(body.Data.Result))
	}
	var v float64
	fmt.Sscan(fmt.Sprint(body.Data.Result[0].Value[1]), &v)
	return body.Data.Result[0].Metric, v, nil
}
