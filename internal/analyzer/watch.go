package analyzer

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"time"

	"k8s.io/utils/clock"
)

// DefaultWatchInterval is how often Watch reads the config file.
const DefaultWatchInterval = 10 * time.Second

// WatchOptions configures Watch.
type WatchOptions struct {
	Path string
	// Clock drives the poll ticker; tests step a fake one. Default real.
	Clock clock.WithTicker
	// Interval between reads; default DefaultWatchInterval.
	Interval time.Duration
	// Current is the rule set in use, if any: content with its hash is
	// not reloaded. With nil, the first poll loads whatever is there.
	Current *RuleSet
	// OnLoad receives each new good rule set (e.g. Engine.SetRuleSet).
	OnLoad func(*RuleSet)
	// OnError receives read and load errors, once per distinct content
	// (or read error), so a bad file is counted once, not every interval.
	// The last good rule set stays in use: Watch never calls OnLoad(nil).
	OnError func(error)
}

// Watch polls the file until ctx ends. It reads and hashes the whole
// file rather than trusting its modification time: a Kubernetes ConfigMap
// volume swaps a symlink, which some filesystems report with an old
// mtime, and the file is small.
func Watch(ctx context.Context, o WatchOptions) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Interval <= 0 {
		o.Interval = DefaultWatchInterval
	}
	w := watcher{o: o}
	if o.Current != nil {
		w.last, w.haveLast = o.Current.Hash(), true
	}
	w.poll()
	t := o.Clock.NewTicker(o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			w.poll()
		}
	}
}

type watcher struct {
	o        WatchOptions
	last     [32]byte // content of the rule set in use
	haveLast bool
	failed   string // last reported error, so it is reported once
}

func (w *watcher) poll() {
	data, err := os.ReadFile(w.o.Path)
	if err != nil {
		w.fail(fmt.Errorf("reading analyzer config: %w", err), err.Error())
		return
	}
	sum := sha256.Sum256(data)
	if w.haveLast && sum == w.last {
		w.failed = ""
		return
	}
	rs, err := Load(data)
	if err != nil {
		// Keyed by content: a second, different bad edit is reported
		// even when its error text is the same.
		w.fail(fmt.Errorf("%s: %w", w.o.Path, err), fmt.Sprintf("%x", sum))
		return
	}
	w.last, w.haveLast, w.failed = sum, true, ""
	if w.o.OnLoad != nil {
		w.o.OnLoad(rs)
	}
}

// fail reports err unless the failure with the same key was the last
// one reported.
func (w *watcher) fail(err error, key string) {
	if key == w.failed {
		return
	}
	w.failed = key
	if w.o.OnError != nil {
		w.o.OnError(err)
	}
}
