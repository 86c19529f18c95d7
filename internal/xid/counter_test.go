package xid

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
)

var t0 = time.Date(2025, 1, 21, 4, 41, 44, 0, time.UTC)

func TestCounterThreshold(t *testing.T) {
	th := Threshold{Count: 3, Window: 10 * time.Minute, Severity: finding.Fatal}
	steps := []struct {
		at   time.Duration
		gpu  string
		want bool
	}{
		{0, "0000:38:00.0", false},
		{2 * time.Minute, "0000:38:00.0", false},
		{2 * time.Minute, "0000:18:00.0", false}, // another GPU counts apart
		{4 * time.Minute, "0000:38:00.0", true},  // 3 within 10m
		{9 * time.Minute, "0000:38:00.0", true},  // last 3: 2m, 4m, 9m
		{13 * time.Minute, "0000:38:00.0", true}, // 4m, 9m, 13m
		{30 * time.Minute, "0000:38:00.0", false},
		{31 * time.Minute, "0000:38:00.0", false}, // 9m..31m spans too long
	}
	c := NewCounter(0, 0)
	for i, s := range steps {
		if got := c.Observe(13, s.gpu, t0.Add(s.at), th); got != s.want {
			t.Errorf("step %d (%v on %s): crossed = %v, want %v", i, s.at, s.gpu, got, s.want)
		}
	}
}

func TestCounterCoalescesBursts(t *testing.T) {
	th := Threshold{Count: 2, Window: time.Hour}
	c := NewCounter(0, time.Second)
	// Sixteen lines of one exception within 2ms are one occurrence.
	for i := range 16 {
		if c.Observe(13, "g", t0.Add(time.Duration(i)*100*time.Microsecond), th) {
			t.Fatalf("line %d of one burst crossed a count of 2", i)
		}
	}
	if !c.Observe(13, "g", t0.Add(5*time.Second), th) {
		t.Error("a second burst 5s later did not cross a count of 2")
	}
	// Further lines of the second burst keep the state: still crossed.
	if !c.Observe(13, "g", t0.Add(5*time.Second+time.Millisecond), th) {
		t.Error("a line of the crossing burst reported not crossed")
	}
}

func TestCounterTimeBackwards(t *testing.T) {
	th := Threshold{Count: 2, Window: time.Minute}
	c := NewCounter(0, 0)
	c.Observe(13, "g", t0.Add(time.Hour), th)
	// A record read late with an older time counts at the latest time.
	if !c.Observe(13, "g", t0, th) {
		t.Error("late record: want crossed (counted at the latest time)")
	}
}

func TestCounterZeroThreshold(t *testing.T) {
	c := NewCounter(0, 0)
	if c.Observe(79, "g", t0, Threshold{}) || c.Len() != 0 {
		t.Error("a zero threshold must neither cross nor track")
	}
}

func TestCounterBoundsKeys(t *testing.T) {
	th := Threshold{Count: 2, Window: time.Minute}
	c := NewCounter(8, 0)
	for i := range 100 {
		c.Observe(13, fmt.Sprintf("gpu-%d", i), t0.Add(time.Duration(i)*time.Second), th)
		if c.Len() > 8 {
			t.Fatalf("after %d keys Len = %d, want ≤ 8", i+1, c.Len())
		}
	}
	// The newest key survived eviction and keeps counting.
	if !c.Observe(13, "gpu-99", t0.Add(100*time.Second), th) {
		t.Error("newest key lost its history")
	}
}

func TestCounterPrunesExpiredKeys(t *testing.T) {
	th := Threshold{Count: 5, Window: time.Minute}
	c := NewCounter(0, 0)
	for i := range 10 {
		c.Observe(13, fmt.Sprintf("gpu-%d", i), t0, th)
	}
	for i := range pruneEvery {
		c.Observe(31, "live", t0.Add(time.Hour+time.Duration(i)*time.Millisecond), th)
	}
	if got := c.Len(); got != 1 {
		t.Errorf("Len after the periodic sweep = %d, want 1", got)
	}
}

func TestEscalated(t *testing.T) {
	e := Entry{Severity: finding.Fatal, Action: finding.ActionResetGPU,
		Threshold: Threshold{Count: 2, Window: time.Hour, Severity: finding.Warning, Action: finding.ActionReplace}}
	sev, act := e.Escalated()
	if sev != finding.Fatal || act != finding.ActionReplace {
		t.Errorf("Escalated = %s/%s, want fatal/replace (only ever raises)", sev, act)
	}
}

// TestCounterConcurrent is for -race: the kernel-log and NVML paths may
// share one counter.
func TestCounterConcurrent(t *testing.T) {
	c := NewCounter(0, 0)
	th := Threshold{Count: 3, Window: time.Minute}
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				c.Observe(13, fmt.Sprintf("gpu-%d", g), t0.Add(time.Duration(i)*time.Second), th)
			}
		}()
	}
	for range 4 {
		<-done
	}
	if c.Len() != 4 {
		t.Errorf("Len = %d, want 4", c.Len())
	}
}
