//go:build integration

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestAgentKernelLogResume runs the agent's kernel-log monitor on a raw
// /dev/kmsg-format file, restarts it, and checks that nothing is reported
// twice and nothing is skipped.
func TestAgentKernelLogResume(t *testing.T) {
	t.Parallel()
	agentBin := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")
	dir := t.TempDir()
	logPath, state := filepath.Join(dir, "kmsg.log"), filepath.Join(dir, "state")
	appendLines(t, logPath,
		"6,100,1000000,-;IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
		"4,101,2000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
	)

	run := func() (stop func()) {
		port := freePort(t)
		stop = startProcess(t, agentBin, "--standalone", "--gpu-backend=sim", "--interval=1s", "--call-timeout=500ms",
			"--kmsg-path="+logPath, "--kmsg-poll-interval=50ms", "--state-dir="+state,
			fmt.Sprintf("--metrics-address=127.0.0.1:%d", port))
		url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		waitHTTP(t, url, 30*time.Second)
		current = func(code string) float64 {
			return metricValue(t, url, fmt.Sprintf(`gpuheal_findings_total{code=%q,severity="fatal"}`, code))
		}
		return stop
	}

	stop := run()
	waitMetric(t, "XID79", 1)
	stop()

	// While the agent is down the GPU falls again, on another bus.
	appendLines(t, logPath, "4,102,3000000,-;NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
	stop = run()
	defer stop()
	// The new record is reported once; the old one is not reported again,
	// so this process's counter ends at exactly 1.
	waitMetric(t, "XID79", 1)
	if raw, _ := os.ReadFile(filepath.Join(state, "kmsg-position.json")); !strings.Contains(string(raw), `"seq":102`) {
		t.Errorf("saved position = %s, want seq 102", raw)
	}
}

// current reads the finding counter of the agent now running.
var current func(code string) float64

// waitMetric polls until the counter equals want, then checks it stays there
// for a few more polls of the file (a duplicate would arrive within them).
func waitMetric(t *testing.T, code string, want float64) {
	t.Helper()
	what := fmt.Sprintf("gpuheal_findings_total{code=%s} = %v", code, want)
	testproc.Eventually(t, 30*time.Second, what, func(context.Context) (bool, error) {
		if got := current(code); got != want {
			return false, fmt.Errorf("it is %v", got)
		}
		return true, nil
	})
	// 10 polls × 50 ms of the file: a re-read would show.
	testproc.Consistently(t, 500*time.Millisecond, what, func() bool { return current(code) == want })
}

func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := fmt.Fprintln(f, l); err != nil {
			t.Fatal(err)
		}
	}
}

// metricValue scrapes url and returns the value of the series, 0 if absent
// and -1 when nothing could be scraped, so that a poll for "absent" cannot
// pass on an unreachable endpoint.
func metricValue(t testing.TB, url, series string) float64 {
	t.Helper()
	text := scrape(t, url)
	if text == "" {
		return -1
	}
	return seriesValue(text, series)
}

// seriesValue finds the series in Prometheus text, 0 if absent.
func seriesValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return 0
}
