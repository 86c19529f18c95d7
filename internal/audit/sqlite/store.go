// Package sqlite is the audit store in a SQLite file (modernc.org/sqlite,
// pure Go), meant for a PersistentVolume mounted into the controller.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/gpuheal/gpuheal/internal/audit"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options configures Open.
type Options struct {
	// ReadOnly opens an existing store for Query, Verify and Export only
	// (the CLI): nothing is created or migrated and Write fails.
	ReadOnly bool
	// Now fills a zero Record.Time (default time.Now).
	Now func() time.Time
	// BusyTimeout is how long a statement waits for another process's
	// lock (default 10s).
	BusyTimeout time.Duration
}

// Store is an audit.Store in one SQLite file in WAL mode. Writes from any
// number of goroutines are serialized by a mutex around the chain append
// (and by SQLite's write lock across processes); reads run alongside.
type Store struct {
	path string
	db   *sql.DB
	ro   bool
	now  func() time.Time

	mu     sync.Mutex // serializes chain appends: Seq must be serial
	insert *sql.Stmt
	head   audit.Head // the last head this process wrote or read (under mu)
	headOK bool
}

var _ audit.Store = (*Store)(nil)

// Open opens the store at path, creating and migrating it when it is new.
// A file that is not SQLite, or a SQLite database without our marker, is
// refused with an error naming the path (ErrNotAuditStore) and left as it
// is; so is a store written by a newer schema.
func Open(ctx context.Context, path string, o Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("audit store %s: %w", path, err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	fresh, appID, err := inspect(abs)
	if err != nil {
		return nil, err
	}
	if o.ReadOnly && fresh {
		return nil, fmt.Errorf("audit store %s does not exist or is empty", abs)
	}
	if !fresh && appID == 0 {
		// SQLite, but the header carries no id (ours may still be in the
		// WAL): look through a read-only connection before opening
		// read-write, which would switch a foreign database to WAL mode.
		if err := refuseForeign(ctx, abs); err != nil {
			return nil, err
		}
	}
	db, err := sql.Open("sqlite", dsn(abs, o))
	if err != nil {
		return nil, fmt.Errorf("opening audit store %s: %w", abs, err)
	}
	s := &Store{path: abs, db: db, ro: o.ReadOnly, now: o.Now}
	if err := s.init(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

func dsn(path string, o Options) string {
	u := url.URL{Scheme: "file", Path: path}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	if o.ReadOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		// NORMAL in WAL mode: a commit is durable once the WAL is synced at
		// checkpoint; a power loss may lose the last commits, never corrupt.
		q.Add("_pragma", "synchronous(NORMAL)")
		// 16 MiB of page cache per connection keeps the upper levels of
		// the indexes of a million-record store in memory.
		q.Add("_pragma", "cache_size(-16384)")
		q.Set("_txlock", "immediate")
	}
	return u.String() + "?" + q.Encode()
}

func refuseForeign(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path}).String()+"?mode=ro")
	if err != nil {
		return fmt.Errorf("opening audit store %s: %w", path, err)
	}
	defer func() { _ = db.Close() }()
	var n, appID int64
	err = db.QueryRowContext(ctx, `SELECT count(*), (SELECT application_id FROM pragma_application_id) FROM sqlite_master`).Scan(&n, &appID)
	if err != nil {
		return fmt.Errorf("audit store %s: %w: cannot read it as SQLite: %w", path, audit.ErrNotAuditStore, err)
	}
	// In WAL mode our id may still sit in the log rather than the header.
	if n > 0 && appID != applicationID {
		return fmt.Errorf("audit store %s: %w: the SQLite database has %d schema objects but no gpuheal marker (refusing to use it)",
			path, audit.ErrNotAuditStore, n)
	}
	return nil
}

func (s *Store) init(ctx context.Context) error {
	if s.ro {
		v, err := schemaVersion(ctx, s.db, s.path)
		if err != nil {
			return err
		}
		if v != SchemaVersion {
			return fmt.Errorf("audit store %s has schema version %d, this gpuheal reads %d", s.path, v, SchemaVersion)
		}
		return checkMarker(ctx, s.db, s.path)
	}
	if err := migrate(ctx, s.db, s.path); err != nil {
		return err
	}
	var err error
	s.insert, err = s.db.PrepareContext(ctx, `INSERT INTO records (seq, key, time, incident, node, policy, kind,
		phase, action, reason, message, provider, request_id, pod, duration, gpus, severity, dry_run, machine,
		prev_hash, hash)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (key) DO NOTHING`)
	if err != nil {
		return fmt.Errorf("preparing audit store %s: %w", s.path, err)
	}
	return nil
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error {
	if s.insert != nil {
		_ = s.insert.Close()
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("closing audit store %s: %w", s.path, err)
	}
	return nil
}
