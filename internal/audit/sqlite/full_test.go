package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// A full disk: SQLite's max_page_count makes the file unable to grow, and
// writes fail with SQLITE_FULL as on a full volume. Buffered keeps the
// records and writes them once the file can grow again.
func TestFullDiskIsBufferedThenFlushed(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "audit.db"))
	if err := s.Write(ctx, audit.Record{Key: "first", Kind: audit.Detected, Node: "gpu-a"}); err != nil {
		t.Fatal(err)
	}
	s.db.SetMaxOpenConns(1) // the pragma below is per connection
	var pages int
	if err := s.db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 8192) // needs new pages
	err := s.Write(ctx, audit.Record{Key: "probe", Kind: audit.Evicted, Message: big})
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("write to a full file = %v, want SQLITE_FULL", err)
	}

	clk := clocktesting.NewFakeClock(t0)
	b, err := audit.NewBuffered(s, audit.BufferOptions{Clock: clk, MinBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := b.Write(ctx, audit.Record{Key: audit.Key("inc", "evict", i), Kind: audit.Evicted, Node: "gpu-a", Message: big}); err != nil {
			t.Fatal(err)
		}
	}
	// The first attempt failed; Buffered waits to retry.
	testproc.EventuallyTrue(t, 10*time.Second, "Buffered to try the store", clk.HasWaiters)
	if b.Pending() != 20 {
		t.Fatalf("pending %d, want 20", b.Pending())
	}

	if _, err := s.db.Exec(`PRAGMA max_page_count = 1000000`); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx)
	if err != nil || !rep.OK || rep.Records != 21 {
		t.Fatalf("Verify = %v, %v", rep, err)
	}
	got, _ := s.Query(ctx, audit.Filter{Node: "gpu-a", Limit: -1})
	if len(got) != 21 || got[20].Key != "inc/evict/19" || got[20].Seq != 21 {
		t.Errorf("Query: %d records, last %+v", len(got), got[len(got)-1].Key)
	}
	if err := b.Close(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
