package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// applicationID marks our files in the SQLite header (PRAGMA
// application_id): "GHAU", gpuheal audit.
const applicationID = 0x47484155

// marker is the row of the meta table that names a gpuheal audit store.
const markerKey, markerValue = "application", "gpuheal-audit"

// migrations[i] brings the schema from version i to i+1. Append only;
// never edit one that has shipped.
var migrations = []string{
	// 1: records, the chain head and the marker.
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
	INSERT INTO meta (key, value) VALUES ('` + markerKey + `', '` + markerValue + `');
	CREATE TABLE records (
		seq        INTEGER PRIMARY KEY,
		key        TEXT    NOT NULL UNIQUE,
		time       INTEGER NOT NULL,
		incident   TEXT    NOT NULL,
		node       TEXT    NOT NULL,
		policy     TEXT    NOT NULL,
		kind       TEXT    NOT NULL,
		phase      TEXT    NOT NULL,
		action     TEXT    NOT NULL,
		reason     TEXT    NOT NULL,
		message    TEXT    NOT NULL,
		provider   TEXT    NOT NULL,
		request_id TEXT    NOT NULL,
		pod        TEXT    NOT NULL,
		duration   INTEGER NOT NULL,
		gpus       TEXT,
		severity   TEXT    NOT NULL,
		dry_run    INTEGER NOT NULL,
		prev_hash  TEXT    NOT NULL,
		hash       TEXT    NOT NULL
	);
	CREATE INDEX records_node_time ON records (node, time);
	CREATE INDEX records_incident_time ON records (incident, time);
	CREATE TABLE head (
		id   INTEGER PRIMARY KEY CHECK (id = 1),
		seq  INTEGER NOT NULL,
		hash TEXT    NOT NULL
	);
	INSERT INTO head (id, seq, hash) VALUES (1, 0, '');`,
	// 2: the machine (hardware identity) of a record's node.
	`ALTER TABLE records ADD COLUMN machine TEXT NOT NULL DEFAULT ''`,
}

// SchemaVersion is the schema this build writes.
var SchemaVersion = len(migrations)

// inspect looks at an existing file before SQLite opens it read-write (which
// would already change a foreign database: WAL mode is persistent). It
// reports whether the file is new (absent, empty) and refuses anything that
// is not SQLite or carries another application's id.
func inspect(path string) (fresh bool, appID uint32, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("opening audit store %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	hdr := make([]byte, 100)
	n, err := io.ReadFull(f, hdr)
	switch {
	case n == 0 && (errors.Is(err, io.EOF) || err == nil):
		return true, 0, nil
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return false, 0, fmt.Errorf("reading audit store %s: %w", path, err)
	case n < 100 || !bytes.HasPrefix(hdr, []byte("SQLite format 3\x00")):
		return false, 0, fmt.Errorf("audit store %s: %w: the file is not a SQLite database (refusing to use or replace it; move it away or choose another path)",
			path, audit.ErrNotAuditStore)
	}
	appID = binary.BigEndian.Uint32(hdr[68:72])
	if appID != 0 && appID != applicationID {
		return false, appID, fmt.Errorf("audit store %s: %w: the SQLite database belongs to another application (application_id %#x)",
			path, audit.ErrNotAuditStore, appID)
	}
	return false, appID, nil
}

// migrate brings a database we own (or an empty one) to SchemaVersion.
func migrate(ctx context.Context, db *sql.DB, path string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("opening audit store %s: %w", path, err)
	}
	defer func() { _ = conn.Close() }()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("opening audit store %s: %w", path, err)
	}
	defer func() { _ = tx.Rollback() }()

	var appID int64
	if err := tx.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil {
		return fmt.Errorf("reading audit store %s: %w", path, err)
	}
	if appID == 0 {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
			return fmt.Errorf("reading audit store %s: %w", path, err)
		}
		if n > 0 {
			return fmt.Errorf("audit store %s: %w: the SQLite database has %d schema objects but no gpuheal marker (refusing to use it)",
				path, audit.ErrNotAuditStore, n)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d;
			CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at INTEGER NOT NULL)`, applicationID)); err != nil {
			return fmt.Errorf("initializing audit store %s: %w", path, err)
		}
	}
	v, err := schemaVersion(ctx, tx, path)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("audit store %s has schema version %d, newer than this gpuheal's %d: upgrade gpuheal", path, v, SchemaVersion)
	}
	for ; v < SchemaVersion; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrating audit store %s to schema version %d: %w", path, v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied_at) VALUES (?, strftime('%s','now'))`, v+1); err != nil {
			return fmt.Errorf("migrating audit store %s to schema version %d: %w", path, v+1, err)
		}
	}
	if err := checkMarker(ctx, tx, path); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrating audit store %s: %w", path, err)
	}
	return nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func schemaVersion(ctx context.Context, q querier, path string) (int, error) {
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("audit store %s: %w: reading schema_version: %w", path, audit.ErrNotAuditStore, err)
	}
	return int(v.Int64), nil
}

func checkMarker(ctx context.Context, q querier, path string) error {
	var val string
	if err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, markerKey).Scan(&val); err != nil || val != markerValue {
		return fmt.Errorf("audit store %s: %w: the gpuheal marker is missing from its meta table", path, audit.ErrNotAuditStore)
	}
	return nil
}
