//go:build integration

package nvml

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

// daemon is a running gpuheal-agent serving metrics.
type daemon struct {
	metricsURL string
	stderr     *syncBuffer
}

// startDaemon runs the agent until the test ends, with metrics on a port
// the kernel picks; the address comes from its "serving metrics" log.
func startDaemon(t *testing.T, lib, mode string, how discovery) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := agentCommand(ctx, t, lib, mode, how, "--interval=1s", "--call-timeout=500ms", "--metrics-address=127.0.0.1:0")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	pr, pw := io.Pipe()
	d := &daemon{stderr: &syncBuffer{}}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			d.stderr.WriteLine(sc.Text())
			var rec struct{ Msg, Address string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving metrics" {
				select {
				case addr <- rec.Address:
				default:
				}
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); _ = pw.Close() }()
	t.Cleanup(func() {
		cancel()
		// A clean stop (exit 0 on SIGTERM) means Close freed the event
		// set and shut NVML down through the library.
		// Wait reports the canceled context even then, so ask the state.
		err := <-exited
		if st := cmd.ProcessState; st == nil || !st.Success() {
			t.Errorf("gpuheal-agent did not stop cleanly on SIGTERM: %v (%v)\nstderr:\n%s", st, err, d.stderr)
		}
	})
	select {
	case a := <-addr:
		d.metricsURL = "http://" + a + "/metrics"
	case err := <-exited:
		exited <- err
		t.Fatalf("gpuheal-agent exited before serving metrics: %v\nstderr:\n%s", err, d.stderr)
	case <-time.After(time.Minute):
		t.Fatalf("gpuheal-agent did not serve metrics within a minute\nstderr:\n%s", d.stderr)
	}
	return d
}

// waitSeries polls the metrics until a line starts with series (name and
// labels as the exporter writes them: sorted), failing at the deadline.
func (d *daemon) waitSeries(t *testing.T, series string, deadline time.Duration) string {
	t.Helper()
	var found string
	testproc.Eventually(t, deadline, "series "+series, func(ctx context.Context) (bool, error) {
		text, err := scrapeText(ctx, d.metricsURL)
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, series) {
				found = line
				return true, nil
			}
		}
		return false, fmt.Errorf("not in the last scrape; its gpuheal_ lines:\n%s\nstderr:\n%s", gpuhealLines(text), d.stderr)
	})
	return found
}

func scrapeText(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func gpuhealLines(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "gpuheal_problem") || strings.HasPrefix(l, "gpuheal_gpu_xid") || strings.HasPrefix(l, "gpuheal_gpu_missing") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// syncBuffer collects stderr lines for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) WriteLine(l string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(l + "\n")
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
