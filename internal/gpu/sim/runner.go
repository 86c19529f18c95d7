package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// SetSchedule replaces the node's schedule with the entries of s for this
// node, checked against it first (GPU count, model, NVSwitch). Times
// still count from Start, so entries already due apply at the next
// ApplyDue, Snapshot or Run step.
func (n *Node) SetSchedule(s Schedule) error {
	mine := s.ForNode(n.opts.NodeName)
	for i, e := range mine {
		sp, err := e.Fault.parse()
		if err == nil {
			err = n.check(sp)
		}
		if err != nil {
			return fmt.Errorf("sim: schedule entry %d for node %s (at %v): %w", i, n.opts.NodeName, e.At, err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.due, n.next = mine, 0
	select {
	case n.wake <- struct{}{}: // a waiting Run recomputes its next wake-up
	default:
	}
	return nil
}

// ApplyDue applies, in order, every schedule entry whose time (Start+At)
// is not after now, and returns them. Each entry applies once.
func (n *Node) ApplyDue(now time.Time) ([]Entry, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errClosed
	}
	applied, err := n.applyDueLocked(now)
	return applied, errors.Join(err, n.surfaceDueLocked(now))
}

func (n *Node) applyDueLocked(now time.Time) ([]Entry, error) {
	var applied []Entry
	var errs []error
	for n.next < len(n.due) && !n.start.Add(n.due[n.next].At).After(now) {
		e := n.due[n.next]
		n.next++
		// Checked by SetSchedule; parse again only to get the spec.
		s, err := e.Fault.parse()
		if err == nil {
			err = n.applyLocked(s, now)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule entry at %v (%s on gpu %d): %w", e.At, e.Fault.Kind, e.Fault.GPU, err))
		}
		applied = append(applied, e)
	}
	return applied, errors.Join(errs...)
}

// Run applies schedule entries as their time comes, waiting on the node's
// clock, which must be a clock.Clock (a fake one steps it in tests). It
// returns nil when ctx ends or the node is closed, and the first
// kernel-log write error otherwise. Snapshot applies due entries too, so
// Run is only needed when kernel-log lines must appear between snapshots.
func (n *Node) Run(ctx context.Context) error {
	clk, ok := n.clock.(clock.Clock)
	if !ok {
		return errors.New("sim: Run needs Options.Clock to be a clock.Clock, not only a PassiveClock")
	}
	for {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return nil
		}
		now := clk.Now()
		_, err := n.applyDueLocked(now)
		var wait time.Duration // until the next entry, if there is one
		more := n.next < len(n.due)
		if more {
			wait = n.start.Add(n.due[n.next].At).Sub(now)
		}
		n.mu.Unlock()
		if err != nil {
			return err
		}
		var due <-chan time.Time
		if more {
			due = clk.After(wait)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-n.wake:
		case <-due:
		}
	}
}
