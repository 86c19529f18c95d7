package remediation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/dynamo"
	"github.com/gpuheal/gpuheal/internal/audit/jsonl"
	"github.com/gpuheal/gpuheal/internal/audit/sqlite"
)

// AuditOptions chooses where the controller's audit log goes.
type AuditOptions struct {
	// Sink: sqlite (default), jsonl, dynamodb or none.
	Sink string
	// SQLitePath is the database file, on a volume that outlives the pod.
	SQLitePath string
	// JSONLPath is a file, or "-" for stdout (for log shippers).
	JSONLPath string
	// DynamoDBTable and DynamoDBEndpoint configure the dynamodb sink.
	DynamoDBTable, DynamoDBEndpoint string
	// Buffer bounds the records kept in memory while the store fails.
	Buffer int
	// SigningKeyDir holds the mounted signing key Secret (signer-key,
	// verifier-key); "" or an empty directory signs no tree heads.
	SigningKeyDir string
}

// openedAudit is the sink the reconcilers write to (buffered, so a failing
// store never holds up remediation), the store's read side for the score's
// history (nil for stdout), and how to close both.
type openedAudit struct {
	sink   audit.Sink
	reader audit.Reader
	close  func() error
	// tailer is the store's record feed for the Notary (nil for stdout
	// and none); notary is set once this replica leads.
	tailer audit.Tailer
	notary *atomic.Pointer[audit.Notary]
}

// openAudit opens the configured store. A store that exists but is not ours
// or is corrupt is an error: the controller refuses to start rather than
// replace it.
func openAudit(ctx context.Context, o AuditOptions, log logr.Logger) (*openedAudit, error) {
	var store audit.Sink
	var reader audit.Reader
	var tailer audit.Tailer
	switch o.Sink {
	case "none":
		return &openedAudit{close: func() error { return nil }}, nil
	case "", "sqlite":
		s, err := sqlite.Open(ctx, o.SQLitePath, sqlite.Options{})
		if err != nil {
			return nil, err
		}
		store, reader, tailer = s, s, s
	case "jsonl":
		if o.JSONLPath == "-" || o.JSONLPath == "" {
			store = jsonl.NewWriter(os.Stdout, jsonl.Options{})
			break
		}
		f, err := jsonl.OpenFile(o.JSONLPath, jsonl.Options{})
		if err != nil {
			return nil, err
		}
		store, reader, tailer = f, f, f
	case "dynamodb":
		s, err := openDynamo(ctx, o)
		if err != nil {
			return nil, err
		}
		store, reader, tailer = s, s, s
	default:
		return nil, fmt.Errorf("--audit-sink %q: want sqlite, jsonl, dynamodb or none", o.Sink)
	}
	notary := &atomic.Pointer[audit.Notary]{}
	buf, err := audit.NewBuffered(store, audit.BufferOptions{Limit: o.Buffer, Registerer: metrics.Registry, Logger: log,
		AfterWrite: syncNotary(notary)})
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	// buf.Close closes the store too.
	return &openedAudit{sink: buf, reader: reader, close: buf.Close, tailer: tailer, notary: notary}, nil
}

// openDynamo uses the default AWS credential chain (IRSA, Pod Identity,
// instance profile) and region; the table must exist (docs/audit.md).
func openDynamo(ctx context.Context, o AuditOptions) (*dynamo.Store, error) {
	if o.DynamoDBTable == "" {
		return nil, fmt.Errorf("--audit-sink dynamodb needs --audit-dynamodb-table")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration for the audit table: %w", err)
	}
	client := dynamodb.NewFromConfig(cfg, func(d *dynamodb.Options) {
		if o.DynamoDBEndpoint != "" {
			d.BaseEndpoint = &o.DynamoDBEndpoint
		}
	})
	return dynamo.Open(ctx, client, o.DynamoDBTable, dynamo.Options{})
}
