package audit

import (
	"context"
	"io"
	"slices"
	"sync"
	"time"
)

// Memory is a Store in memory, for tests of the code that writes records.
// Its Fail hook injects write errors.
type Memory struct {
	mu    sync.Mutex
	recs  []Record
	keys  map[string]bool
	head  Head
	now   func() time.Time
	fail  error
	calls int
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{keys: map[string]bool{}, now: time.Now}
}

// Fail makes every Write return err until Fail(nil).
func (m *Memory) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}

// WriteCalls counts Write calls, failed ones included.
func (m *Memory) WriteCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Write implements Sink.
func (m *Memory) Write(_ context.Context, recs ...Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return m.fail
	}
	prepared, err := Prepare(recs, m.now)
	if err != nil {
		return err
	}
	for i := range prepared {
		r := &prepared[i]
		if m.keys[r.Key] {
			continue
		}
		m.head = Seal(m.head, r)
		m.keys[r.Key] = true
		m.recs = append(m.recs, *r)
	}
	return nil
}

// Records returns a copy of everything written, in order.
func (m *Memory) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs)
}

// Query implements Reader.
func (m *Memory) Query(_ context.Context, f Filter) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for i := range m.recs {
		if f.Match(&m.recs[i]) {
			out = append(out, m.recs[i])
		}
	}
	if n := f.EffectiveLimit(); n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

// Verify implements Reader.
func (m *Memory) Verify(context.Context) (Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var v Verifier
	for i := range m.recs {
		v.Add(&m.recs[i])
	}
	h := m.head
	return v.Finish(&h), nil
}

// Export implements Reader.
func (m *Memory) Export(_ context.Context, w io.Writer) error {
	lw := NewLineWriter(w)
	for _, r := range m.Records() {
		if err := lw.Write(&r); err != nil {
			return err
		}
	}
	return nil
}

// Close implements Sink.
func (m *Memory) Close() error { return nil }

// Since implements Tailer.
func (m *Memory) Since(_ context.Context, after uint64, fn func(*Record) error) error {
	for _, r := range m.Records() {
		if r.Seq > after {
			if err := fn(&r); err != nil {
				return err
			}
		}
	}
	return nil
}
