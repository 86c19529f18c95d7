package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// BufferOptions configures Buffered. Zero values take the defaults.
type BufferOptions struct {
	// Limit is how many records wait in memory for a failing store
	// (default 10,000). Records beyond it are dropped, counted in
	// gpuheal_audit_records_dropped_total and logged one by one.
	Limit int
	// Batch is the most records per store call (default 500).
	Batch int
	// MinBackoff and MaxBackoff bound the wait between retries of a
	// failing store; it doubles from min to max (defaults 1s, 1m).
	MinBackoff, MaxBackoff time.Duration
	// WriteTimeout bounds one store call (default 30s).
	WriteTimeout time.Duration
	// CloseTimeout bounds Close's last attempt to write what is left
	// (default 10s).
	CloseTimeout time.Duration
	// Clock drives the backoff and fills Record.Time (default real time).
	Clock clock.Clock
	// Registerer receives the gpuheal_audit_* metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger reports store errors and every dropped record.
	Logger logr.Logger
	// AfterWrite runs in the writer loop after each batch the store took
	// (Notary.Sync); its error is logged, and it runs again after the next.
	AfterWrite func(context.Context) error
}

func (o *BufferOptions) defaults() {
	if o.Limit <= 0 {
		o.Limit = 10_000
	}
	if o.Batch <= 0 {
		o.Batch = 500
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(time.Minute, o.MinBackoff)
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 10 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Buffered puts a queue in front of a Sink so that the controller never
// waits on the store: Write only queues, and a background loop writes the
// queue in order, retrying a failing store with backoff until it works
// again. Records wait in memory up to a bound; what does not fit is
// dropped, counted and logged, never silently.
type Buffered struct {
	sink Sink
	o    BufferOptions
	m    bufferMetrics

	mu      sync.Mutex
	queue   []Record
	dropped uint64
	closed  bool
	changed chan struct{} // closed and replaced whenever the queue shrinks

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("audit sink is closed")

// NewBuffered starts the background writer for sink. It fails only when
// the metrics cannot be registered.
func NewBuffered(sink Sink, o BufferOptions) (*Buffered, error) {
	o.defaults()
	b := &Buffered{
		sink:    sink,
		o:       o,
		m:       newBufferMetrics(),
		changed: make(chan struct{}),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if o.Registerer != nil {
		if err := b.m.register(o.Registerer); err != nil {
			return nil, fmt.Errorf("registering audit metrics: %w", err)
		}
	}
	go b.loop()
	return b, nil
}

// Write queues recs and returns at once. Only an invalid record (no Key or
// Kind) or a closed Buffered is an error; records that do not fit the
// bound are dropped and logged, and Write still returns nil so that
// remediation goes on.
func (b *Buffered) Write(_ context.Context, recs ...Record) error {
	prepared, err := Prepare(recs, b.o.Clock.Now)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	room := max(b.o.Limit-len(b.queue), 0)
	var lost []Record
	if len(prepared) > room {
		lost = prepared[room:]
		prepared = prepared[:room]
		b.dropped += uint64(len(lost))
	}
	b.queue = append(b.queue, prepared...)
	b.m.buffered.Set(float64(len(b.queue)))
	b.mu.Unlock()
	b.drop(lost, "the audit buffer is full")
	select {
	case b.kick <- struct{}{}:
	default:
	}
	return nil
}

func (b *Buffered) drop(lost []Record, why string) {
	if len(lost) == 0 {
		return
	}
	b.m.dropped.Add(float64(len(lost)))
	for i := range lost {
		r := &lost[i]
		b.o.Logger.Error(nil, "Audit record dropped", "why", why, "limit", b.o.Limit,
			"key", r.Key, "kind", r.Kind, "time", r.Time, "node", r.Node, "incident", r.Incident,
			"policy", r.Policy, "phase", r.Phase, "action", r.Action, "reason", r.Reason,
			"message", r.Message, "provider", r.Provider, "requestID", r.RequestID, "pod", r.Pod)
	}
}

// Pending is how many records wait for the store.
func (b *Buffered) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// Dropped is how many records were lost since the start.
func (b *Buffered) Dropped() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Flush waits until every queued record is in the store or ctx ends.
func (b *Buffered) Flush(ctx context.Context) error {
	for {
		b.mu.Lock()
		n, ch := len(b.queue), b.changed
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("flushing audit records (%d left): %w", n, ctx.Err())
		}
	}
}

// Close stops the background loop, makes one last attempt (bounded by
// CloseTimeout) to write what is queued, counts and logs what is still
// left as dropped, and closes the store.
func (b *Buffered) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	<-b.done

	ctx, cancel := context.WithTimeout(context.Background(), b.o.CloseTimeout)
	defer cancel()
	var lastErr error
	for b.Pending() > 0 && ctx.Err() == nil {
		if lastErr = b.writeBatch(ctx); lastErr != nil {
			break
		}
	}
	b.mu.Lock()
	lost := b.queue
	b.queue = nil
	b.dropped += uint64(len(lost))
	b.m.buffered.Set(0)
	close(b.changed) // wake Flush: the queue is empty now, one way or the other
	b.changed = make(chan struct{})
	b.mu.Unlock()
	if lastErr == nil && len(lost) > 0 {
		lastErr = ctx.Err()
	}
	b.drop(lost, fmt.Sprintf("closing while the store fails: %v", lastErr))
	b.afterWrite() // sign what the last attempt wrote
	err := b.sink.Close()
	if len(lost) > 0 {
		err = errors.Join(fmt.Errorf("%d audit records dropped at close: %w", len(lost), lastErr), err)
	}
	return err
}

func (b *Buffered) loop() {
	defer close(b.done)
	backoff := b.o.MinBackoff
	for {
		select {
		case <-b.stop:
			return
		case <-b.kick:
		}
		for b.Pending() > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), b.o.WriteTimeout)
			err := b.writeBatch(ctx)
			cancel()
			if err == nil {
				b.afterWrite()
				backoff = b.o.MinBackoff
				continue
			}
			b.o.Logger.Error(err, "Writing audit records failed; keeping them to retry",
				"buffered", b.Pending(), "limit", b.o.Limit, "retryIn", backoff)
			t := b.o.Clock.NewTimer(backoff)
			select {
			case <-b.stop:
				t.Stop()
				return
			case <-t.C():
			}
			backoff = min(2*backoff, b.o.MaxBackoff)
		}
	}
}

// writeBatch writes the head of the queue and removes it on success. The
// records stay queued while the call runs, so they count against the bound.
func (b *Buffered) writeBatch(ctx context.Context) error {
	b.mu.Lock()
	n := min(len(b.queue), b.o.Batch)
	batch := b.queue[:n:n]
	b.mu.Unlock()
	if n == 0 {
		return nil
	}
	if err := b.sink.Write(ctx, batch...); err != nil {
		b.m.writeErrors.Inc()
		return err
	}
	b.mu.Lock()
	b.queue = b.queue[n:]
	if len(b.queue) == 0 {
		b.queue = nil
	}
	b.m.buffered.Set(float64(len(b.queue)))
	// Count before telling waiters: a Flush that returns sees the metrics
	// of what it waited for.
	b.m.written.Add(float64(n))
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	return nil
}

func (b *Buffered) afterWrite() {
	if b.o.AfterWrite == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.o.WriteTimeout)
	defer cancel()
	if err := b.o.AfterWrite(ctx); err != nil {
		b.o.Logger.Error(err, "After writing audit records")
	}
}

type bufferMetrics struct {
	writeErrors, dropped, written prometheus.Counter
	buffered                      prometheus.Gauge
}

func newBufferMetrics() bufferMetrics {
	return bufferMetrics{
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuheal_audit_write_errors_total",
			Help: "Audit store writes that failed (each is retried).",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuheal_audit_records_dropped_total",
			Help: "Audit records lost because the buffer in front of a failing store was full or the process closed.",
		}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuheal_audit_records_written_total",
			Help: "Audit records handed to the store successfully (repeated keys included).",
		}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuheal_audit_buffered_records",
			Help: "Audit records waiting in memory for the store.",
		}),
	}
}

func (m bufferMetrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.writeErrors, m.dropped, m.written, m.buffered} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
