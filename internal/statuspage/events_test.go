package statuspage

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/fleetview"
)

type event struct{ name, data string }

// stream opens the event stream; reads fail when the test's deadline passes.
func stream(t *testing.T, url string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("events: %d %q, want 200 text/event-stream", resp.StatusCode, ct)
	}
	return bufio.NewReader(resp.Body)
}

// next reads the next event, skipping the retry hint.
func next(t *testing.T, r *bufio.Reader) event {
	t.Helper()
	var e event
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && e.name != "":
			return e
		case strings.HasPrefix(line, "event: "):
			e.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			e.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestEventsStreamChanges(t *testing.T) {
	c := fleetFixture(t)
	clock := clocktesting.NewFakeClock(now)
	srv := serve(t, c, Options{Interval: time.Second, KeepAlive: 5 * time.Second, Clock: clock})
	r := stream(t, srv.URL+Prefix+EventsPath)

	if e := next(t, r); e.name != EventFleet {
		t.Fatalf("first event %q, want %q", e.name, EventFleet)
	}
	if e := next(t, r); e.name != EventIncidents {
		t.Fatalf("second event %q, want %q", e.name, EventIncidents)
	}

	// A fault: the next look sends the fleet again, and only the fleet.
	breakNode(t, c, "gpu-a")
	clock.Step(time.Second)
	e := next(t, r)
	var f fleetview.View
	if err := json.Unmarshal([]byte(e.data), &f); e.name != EventFleet || err != nil {
		t.Fatalf("after a fault: event %q (%v), want %q", e.name, err, EventFleet)
	}
	if f.Nodes[0].Name != "gpu-a" || f.Nodes[0].State != fleetview.StateUnhealthy {
		t.Errorf("after a fault: %s is %s, want gpu-a unhealthy", f.Nodes[0].Name, f.Nodes[0].State)
	}

	// Nothing changes: after KeepAlive of silence, a ping.
	clock.Step(5 * time.Second)
	if e := next(t, r); e.name != EventPing {
		t.Errorf("after silence: event %q, want %q", e.name, EventPing)
	}
}
