package xid

import (
	"strings"
	"sync"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// Escalated is the severity and action of e once its threshold is
// crossed. A threshold only ever raises: a line that is already worse
// (94 with "RST: Yes") keeps its own values.
func (e Entry) Escalated() (finding.Severity, finding.Action) {
	return maxSeverity(e.Severity, e.Threshold.Severity), maxAction(e.Action, e.Threshold.Action)
}

// DefaultCoalesce is the burst gap Counter uses by default: the driver
// prints one Xid 13 line per SM/TPC of a single exception, all within
// milliseconds, and those are one occurrence, not sixteen.
const DefaultCoalesce = time.Second

// DefaultMaxKeys bounds the (code, GPU) pairs a Counter tracks by default;
// a node has at most a few dozen.
const DefaultMaxKeys = 256

// pruneEvery is how many observations pass between sweeps for expired keys.
const pruneEvery = 4096

// Counter counts occurrences of a code on one GPU over a sliding window.
// Time is whatever the caller passes (the kernel's record time), so tests
// step it freely. Memory is bounded: per key it keeps only the last Count
// occurrences (all that deciding "Count within Window" needs), and it
// tracks at most maxKeys keys, dropping expired ones first and then the
// one idle longest. Safe for concurrent use: the kernel-log and NVML event
// paths may share one.
type Counter struct {
	mu       sync.Mutex
	coalesce time.Duration
	maxKeys  int
	keys     map[counterKey]*history
	seen     int
}

type counterKey struct {
	code uint64
	gpu  string
}

// history is a ring of the most recent occurrence times of one key.
type history struct {
	times  []time.Time
	next   int // where the next time goes; when full, the oldest
	n      int
	last   time.Time // last counted occurrence
	window time.Duration
}

// NewCounter makes a counter for at most maxKeys (code, GPU) pairs
// (DefaultMaxKeys when ≤ 0). Occurrences of a key less than coalesce
// after its last counted one are part of the same burst and not counted
// again; coalesce ≤ 0 counts every occurrence.
func NewCounter(maxKeys int, coalesce time.Duration) *Counter {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Counter{coalesce: coalesce, maxKeys: maxKeys, keys: make(map[counterKey]*history)}
}

// Observe records an occurrence of code on gpu at t and reports whether th
// is crossed: th.Count occurrences within th.Window, this one included. A
// zero threshold is never crossed and records nothing. Times that run
// backwards (an old record read late) count at the latest time seen.
func (c *Counter) Observe(code uint64, gpu string, t time.Time, th Threshold) bool {
	if th.Count <= 0 {
		return false
	}
	size := min(th.Count, MaxCount)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	if c.seen%pruneEvery == 0 {
		c.prune(t)
	}
	h := c.keys[counterKey{code, gpu}]
	if h == nil || len(h.times) != size {
		// A new key, or the threshold changed size: start over.
		if h == nil && len(c.keys) >= c.maxKeys {
			c.prune(t)
			c.evictOldest()
		}
		h = &history{times: make([]time.Time, size)}
		c.keys[counterKey{code, strings.Clone(gpu)}] = h
	}
	h.window = th.Window
	if t.Before(h.last) {
		t = h.last
	}
	if h.n == 0 || c.coalesce <= 0 || t.Sub(h.last) >= c.coalesce {
		h.times[h.next] = t
		h.next = (h.next + 1) % size
		h.n = min(h.n+1, size)
		h.last = t
	}
	return h.n == size && t.Sub(h.times[h.next]) <= th.Window
}

// Len is the number of keys tracked.
func (c *Counter) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}

// prune drops keys whose every occurrence is older than their window.
func (c *Counter) prune(now time.Time) {
	for k, h := range c.keys {
		if now.Sub(h.last) > h.window {
			delete(c.keys, k)
		}
	}
}

func (c *Counter) evictOldest() {
	if len(c.keys) < c.maxKeys {
		return
	}
	var oldest counterKey
	var first = true
	var at time.Time
	for k, h := range c.keys {
		if first || h.last.Before(at) {
			oldest, at, first = k, h.last, false
		}
	}
	delete(c.keys, oldest)
}
