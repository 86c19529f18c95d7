package analyzer

import (
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
)

// problemKey identifies one problem of a rule: the GPU ("" for the node),
// the RDMA port (port rules) or the adapter a finding names, and, for
// finding rules, the finding's code, so that Xid 48 and Xid 95 on one GPU
// are two problems with their own reasons and clocks, and so are one code
// on two adapters.
type problemKey struct {
	gpu, port, code string
}

// state is the life of one problem: pending (holding, waiting out For),
// active, then clearing (not holding, waiting out ClearAfter).
type state struct {
	gpu  *GPURef
	port *PortRef
	code string
	// pendingSince is when the current unbroken run of "holds" began;
	// zero while not holding.
	pendingSince time.Time
	lastTrue     time.Time
	// occ are occurrence times within the count window, oldest first, at
	// most Count.N of them: that is all "N within Window" needs.
	occ     []time.Time
	holding bool // held in the latest evaluation (state rules)
	seen    bool // evaluated in the current round

	active  bool
	since   time.Time
	latched bool

	reason, message string
	action          finding.Action
	value           any
}

// observe feeds one evaluation (state rules: at = now) or one matching
// finding (at = its time, held = true) and reports whether the problem
// held, so the caller renders its text only then.
func (s *state) observe(r *Rule, held bool, at time.Time) bool {
	return s.observeN(r, held, at, 1)
}

// observeN is observe where one evaluation that held is times
// occurrences of a count window.
func (s *state) observeN(r *Rule, held bool, at time.Time, times int) bool {
	if r.Count.N > 0 {
		for range times * boolInt(held) {
			s.occ = append(s.occ, at)
		}
		if held {
			if len(s.occ) > r.Count.N {
				s.occ = s.occ[len(s.occ)-r.Count.N:]
			}
		}
		s.trim(r, at)
		held = len(s.occ) >= r.Count.N
	}
	s.holding = held
	if !held {
		s.pendingSince = time.Time{}
		return false
	}
	if s.pendingSince.IsZero() {
		s.pendingSince = at
	}
	if at.After(s.lastTrue) {
		s.lastTrue = at
	}
	if !s.active && at.Sub(s.pendingSince) >= r.For {
		s.active, s.since = true, at
		s.latched = r.Latched
	}
	if r.Scope == ScopeFinding {
		// A finding is an instant, not a run: nothing stays pending.
		s.pendingSince = time.Time{}
	}
	return true
}

// trim drops occurrences that fell out of the window ending at now.
func (s *state) trim(r *Rule, now time.Time) {
	cut := 0
	for cut < len(s.occ) && now.Sub(s.occ[cut]) >= r.Count.Window {
		cut++
	}
	if cut > 0 {
		s.occ = append(s.occ[:0], s.occ[cut:]...)
	}
}

// expire clears an active problem whose cause has been gone ClearAfter,
// and reports whether the state is now empty and can be dropped. A state
// rule that still holds never clears; a finding rule clears ClearAfter
// after its last matching finding. Latched problems wait for a reboot.
func (s *state) expire(r *Rule, now time.Time) (empty bool) {
	if r.Count.N > 0 {
		s.trim(r, now)
	}
	if s.active && !s.latched && !(r.Scope != ScopeFinding && s.holding) &&
		now.Sub(s.lastTrue) >= r.ClearAfter {
		s.active = false
		s.since = time.Time{}
	}
	return !s.active && s.pendingSince.IsZero() && len(s.occ) == 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
