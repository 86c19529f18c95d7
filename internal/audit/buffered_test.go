package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/testproc"
)

func metricsText(t *testing.T, reg *prometheus.Registry, want string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

const help = `# HELP gpuheal_audit_buffered_records Audit records waiting in memory for the store.
# TYPE gpuheal_audit_buffered_records gauge
gpuheal_audit_buffered_records %d
# HELP gpuheal_audit_records_dropped_total Audit records lost because the buffer in front of a failing store was full or the process closed.
# TYPE gpuheal_audit_records_dropped_total counter
gpuheal_audit_records_dropped_total %d
# HELP gpuheal_audit_records_written_total Audit records handed to the store successfully (repeated keys included).
# TYPE gpuheal_audit_records_written_total counter
gpuheal_audit_records_written_total %d
# HELP gpuheal_audit_write_errors_total Audit store writes that failed (each is retried).
# TYPE gpuheal_audit_write_errors_total counter
gpuheal_audit_write_errors_total %d
`

func r(i int) Record {
	return Record{Key: Key("inc", "step", i), Kind: Evicted, Node: "gpu-a", Incident: "inc"}
}

func TestBufferedRetriesAFailingStore(t *testing.T) {
	ctx := context.Background()
	store := NewMemory()
	store.Fail(errors.New("database or disk is full"))
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	var (
		logMu sync.Mutex
		logs  []string
	)
	log := funcr.New(func(_, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		logs = append(logs, args)
	}, funcr.Options{})
	b, err := NewBuffered(store, BufferOptions{Limit: 5, Batch: 2, MinBackoff: time.Second, MaxBackoff: 4 * time.Second,
		Clock: clk, Registerer: reg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 { // two more than the bound
		start := time.Now()
		if err := b.Write(ctx, r(i)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Write blocked for %v", d)
		}
	}
	// The loop tried, failed and waits one backoff.
	testproc.EventuallyTrue(t, 10*time.Second, "the first failed attempt", func() bool { return clk.HasWaiters() })
	metricsText(t, reg, fmt.Sprintf(help, 5, 2, 0, 1))
	if b.Pending() != 5 || b.Dropped() != 2 {
		t.Errorf("pending %d dropped %d", b.Pending(), b.Dropped())
	}
	logMu.Lock()
	dropped := 0
	for _, l := range logs {
		if strings.Contains(l, `"Audit record dropped"`) {
			dropped++
			if !strings.Contains(l, `"key"="inc/step/5"`) && !strings.Contains(l, `"key"="inc/step/6"`) {
				t.Errorf("drop log names another record: %s", l)
			}
		}
	}
	if dropped != 2 {
		t.Errorf("%d drop logs, want 2:\n%s", dropped, strings.Join(logs, "\n"))
	}
	logMu.Unlock()

	// Still failing: the backoff doubles.
	clk.Step(time.Second)
	testproc.EventuallyTrue(t, 10*time.Second, "the second attempt", func() bool { return store.WriteCalls() == 2 && clk.HasWaiters() })
	clk.Step(time.Second)
	if store.WriteCalls() != 2 {
		t.Error("retried before the doubled backoff")
	}

	// The store is back: everything queued is written, in order.
	store.Fail(nil)
	clk.Step(time.Second)
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, rec := range store.Records() {
		keys = append(keys, rec.Key)
	}
	if got, want := strings.Join(keys, " "), "inc/step/0 inc/step/1 inc/step/2 inc/step/3 inc/step/4"; got != want {
		t.Errorf("stored %s, want %s", got, want)
	}
	metricsText(t, reg, fmt.Sprintf(help, 0, 2, 5, 2))
	if rep, _ := store.Verify(ctx); !rep.OK || rep.Records != 5 {
		t.Errorf("Verify = %v", rep)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, r(9)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v", err)
	}
}

func TestBufferedTimeIsWhenWritten(t *testing.T) {
	store := NewMemory()
	store.Fail(errors.New("down"))
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	b, err := NewBuffered(store, BufferOptions{Clock: clk, MinBackoff: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	written := clk.Now()
	_ = b.Write(context.Background(), r(0))
	testproc.EventuallyTrue(t, 10*time.Second, "the failed attempt", clk.HasWaiters)
	store.Fail(nil)
	clk.Step(time.Minute)
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := store.Records()[0].Time; !got.Equal(written) {
		t.Errorf("record time %v, want the time of Write %v", got, written)
	}
	_ = b.Close()
}

func TestBufferedCloseCountsWhatIsLeft(t *testing.T) {
	store := NewMemory()
	store.Fail(errors.New("down"))
	reg := prometheus.NewRegistry()
	b, err := NewBuffered(store, BufferOptions{Registerer: reg, CloseTimeout: time.Second, MinBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Write(context.Background(), r(0), r(1), r(2))
	err = b.Close()
	if err == nil || !strings.Contains(err.Error(), "3 audit records dropped at close") {
		t.Errorf("Close = %v", err)
	}
	if b.Dropped() != 3 || b.Pending() != 0 {
		t.Errorf("dropped %d pending %d", b.Dropped(), b.Pending())
	}
	if got := testutil.ToFloat64(b.m.dropped); got != 3 {
		t.Errorf("dropped metric %v", got)
	}
	if _, err := NewBuffered(store, BufferOptions{Registerer: reg}); err == nil {
		t.Error("registering the metrics twice succeeded")
	}
}
