package trace

import (
	"slices"
	"time"
)

// Labels answers, for one GPU slot, the questions training and evaluation
// ask at each sample. Samples must be asked about in time order.
type Labels struct {
	failures []Failure // this GPU's, by time
	i        int       // first failure whose repair is not yet behind us
}

// LabelsFor returns the labels of GPU gpu.
func (m *Manifest) LabelsFor(gpu int) *Labels {
	l := &Labels{}
	for _, f := range m.Failures {
		if f.GPU == gpu {
			l.failures = append(l.failures, f)
		}
	}
	slices.SortFunc(l.failures, func(a, b Failure) int { return a.Time.Compare(b.Time) })
	return l
}

// Failures returns the GPU's failures in time order.
func (l *Labels) Failures() []Failure { return l.failures }

// At classifies time t. out: the slot is out of service (from a failure
// to its repair) and the sample must be skipped. replaced: a new board
// took the slot since the previous call, so feature state must restart.
// next: the next failure after t, if any.
func (l *Labels) At(t time.Time) (out, replaced bool, next *Failure) {
	for l.i < len(l.failures) && !t.Before(l.failures[l.i].RepairedAt) {
		l.i++
		replaced = true
	}
	if l.i == len(l.failures) {
		return false, replaced, nil
	}
	f := &l.failures[l.i]
	return !t.Before(f.Time), replaced, f
}
