package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"
	"k8s.io/utils/clock"
)

// Publisher puts a signed tree head somewhere outside the store, where
// whoever can rewrite the store cannot also rewrite it. tree is the tree
// the head was taken from, to check an earlier head found there against
// (a publisher must refuse to replace a head that tree does not extend).
type Publisher interface {
	PublishHead(ctx context.Context, signed []byte, head TreeHead, tree *Tree) error
}

// NotaryOptions configures a Notary.
type NotaryOptions struct {
	// Signer signs the heads (NewSigner); nil publishes the tree size
	// metric only.
	Signer note.Signer
	// Publishers receive each new signed head, in order.
	Publishers []Publisher
	// Clock stamps the heads (default real time).
	Clock clock.Clock
	// Registerer receives gpuheal_audit_tree_size and
	// gpuheal_audit_head_publish_errors_total; nil registers none.
	Registerer prometheus.Registerer
	Logger     logr.Logger
}

// Notary keeps the Merkle tree of a store and signs and publishes a tree
// head whenever the store has grown. Call Sync after each write
// (BufferOptions.AfterWrite does).
type Notary struct {
	src  Tailer
	o    NotaryOptions
	tree *Tree

	mu        sync.Mutex // one Sync at a time
	published int64      // size of the last head every publisher took
	signed    []byte

	size      prometheus.Gauge
	pubErrors prometheus.Counter
}

// NewNotary reads every record of src into the tree, checking the chain
// once from seq 1 (this is also how a log written before the tree existed
// is carried over: its records become the first leaves), and publishes the
// first head. A broken chain is an error: no head is signed over it.
func NewNotary(ctx context.Context, src Tailer, o NotaryOptions) (*Notary, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	n := &Notary{src: src, o: o, tree: &Tree{}, published: -1,
		size: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuheal_audit_tree_size",
			Help: "Records in the audit log's Merkle tree (the size of the newest tree head).",
		}),
		pubErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuheal_audit_head_publish_errors_total",
			Help: "Signed audit tree heads a publisher refused or failed to take (each is retried at the next write).",
		}),
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{n.size, n.pubErrors} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("registering audit tree metrics: %w", err)
			}
		}
	}
	if err := n.Sync(ctx); err != nil {
		var pe *PublishError
		if !errors.As(err, &pe) {
			return nil, err
		}
		o.Logger.Error(err, "Publishing the first audit tree head; retrying after the next write")
	}
	return n, nil
}

// PublishError is a head a publisher refused or failed to take; the tree
// itself is good, and the next Sync publishes again.
type PublishError struct{ Err error }

func (e *PublishError) Error() string { return e.Err.Error() }
func (e *PublishError) Unwrap() error { return e.Err }

// Tree is the notary's tree (for the audit API and tests).
func (n *Notary) Tree() *Tree { return n.tree }

// Signed is the newest signed head (nil before the first or without a Signer).
func (n *Notary) Signed() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.signed
}

// Sync adds the records written since the last call to the tree and, when
// the tree grew (or the last head did not reach every publisher), signs
// and publishes its head. A record that does not continue the chain stops
// the tree there for good: nothing after it is signed.
func (n *Notary) Sync(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := n.src.Since(ctx, uint64(n.tree.Size()), n.tree.Add)
	if err != nil {
		err = fmt.Errorf("extending the audit tree after seq %d: %w", n.tree.Size(), err)
	}
	size := n.tree.Size()
	n.size.Set(float64(size))
	if n.o.Signer == nil || size == n.published {
		return err
	}
	head, herr := n.tree.Head(size)
	if herr != nil {
		return errors.Join(err, herr)
	}
	head.Time = n.o.Clock.Now().UTC()
	signed, serr := SignHead(head, n.o.Signer)
	if serr != nil {
		return errors.Join(err, serr)
	}
	n.signed = signed
	ok := true
	for _, p := range n.o.Publishers {
		if perr := p.PublishHead(ctx, signed, head, n.tree); perr != nil {
			n.pubErrors.Inc()
			ok = false
			err = errors.Join(err, &PublishError{Err: fmt.Errorf("publishing audit tree head at size %d: %w", size, perr)})
		}
	}
	if ok {
		n.published = size
	}
	return err
}

// LogPublisher writes each signed head to the controller's log: a second
// copy outside the store wherever the logs are shipped.
type LogPublisher struct{ Logger logr.Logger }

// PublishHead implements Publisher.
func (l LogPublisher) PublishHead(_ context.Context, signed []byte, h TreeHead, _ *Tree) error {
	l.Logger.Info("Audit tree head signed", "size", h.Size, "hash", h.Hash.String(), "signedHead", string(signed))
	return nil
}
