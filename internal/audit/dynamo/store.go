// Package dynamo is the audit store in a DynamoDB table.
//
// Every write is a PutItem with attribute_not_exists(pk): nothing the store
// writes is ever overwritten, updated or deleted, so the controller's role
// needs no UpdateItem or DeleteItem. A record item (pk "rec", sk = its Seq)
// is the commit point: two writers that sealed a record after the same
// last record race for the same Seq, and the condition lets one win; the
// other reads the new last record and starts over. Each Key has a key item
// (pk "key#<key>") naming its Seq, put after the record; a writer first
// completes the last record's key item (its writer may have died between
// the two puts), then looks its own Key up, so a Key is stored once.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// Options configures Open.
type Options struct {
	// Now fills a zero Record.Time (default time.Now).
	Now func() time.Time
	// MaxAttempts bounds the retries of one append when other writers
	// keep winning the head (default 100).
	MaxAttempts int
}

// Store is an audit.Store in one DynamoDB table.
type Store struct {
	api   API
	table string
	o     Options

	mu       sync.Mutex // one append at a time from this process
	migrated bool       // the legacy head was looked at (under mu)
}

var _ audit.Store = (*Store)(nil)

// Open checks that table exists and is an audit table (see CreateTable)
// and returns the store. It needs dynamodb:DescribeTable.
func Open(ctx context.Context, api API, table string, o Options) (*Store, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 100
	}
	if _, err := checkTable(ctx, api, table); err != nil {
		return nil, err
	}
	return &Store{api: api, table: table, o: o}, nil
}

// Close does nothing: the client belongs to the caller.
func (s *Store) Close() error { return nil }

// legacyHead is the head item of the hash-chain tables written before
// the Merkle tree: read only, to carry such a table over (migrate).
type legacyHead struct {
	Seq     uint64 `dynamodbav:"seq,omitempty"`
	Hash    string `dynamodbav:"hash,omitempty"`
	Pending *item  `dynamodbav:"pending,omitempty"`
}

// Write appends recs one by one. A failure leaves the records before it
// written; writing the same records again skips them by Key.
func (s *Store) Write(ctx context.Context, recs ...audit.Record) error {
	prepared, err := audit.Prepare(recs, s.o.Now)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.migrated {
		if err := s.migrate(ctx); err != nil {
			return fmt.Errorf("carrying over the legacy head of table %s: %w", s.table, err)
		}
		s.migrated = true
	}
	for i := range prepared {
		if err := s.append(ctx, &prepared[i]); err != nil {
			return fmt.Errorf("writing audit record %s to table %s: %w", prepared[i].Key, s.table, err)
		}
	}
	return nil
}

func (s *Store) append(ctx context.Context, r *audit.Record) error {
	for range s.o.MaxAttempts {
		last, err := s.last(ctx)
		if err != nil {
			return err
		}
		var h audit.Head
		if last != nil {
			if err := s.putKey(ctx, last); err != nil {
				return err
			}
			h = audit.Head{Seq: last.SK, Hash: last.Hash}
		}
		seq, err := s.keySeq(ctx, r.Key)
		if err != nil {
			return err
		}
		if seq != 0 {
			return nil // stored before
		}
		sealed := *r
		audit.Seal(h, &sealed)
		it := toItem(&sealed)
		won, err := s.putRecord(ctx, &it)
		if err != nil {
			return err
		}
		if won {
			return s.putKey(ctx, &it)
		}
		// Another writer took the Seq; start over after its record.
	}
	return fmt.Errorf("gave up after %d attempts: other writers kept taking the next seq", s.o.MaxAttempts)
}

// last is the record with the highest Seq, nil in an empty table.
func (s *Store) last(ctx context.Context) (*item, error) {
	out, err := s.api.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pkRec)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(1),
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("reading the last record: %w", err)
	}
	its, err := unmarshalItems(out.Items)
	if err != nil || len(its) == 0 {
		return nil, err
	}
	return &its[0], nil
}

// putRecord puts it unless its Seq is taken (then it reports false).
func (s *Store) putRecord(ctx context.Context, it *item) (bool, error) {
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return false, err
	}
	err = s.putNew(ctx, av)
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("putting record seq %d: %w", it.SK, err)
	}
	return true, nil
}

// putKey records that it's Key is stored at its Seq. A key item that is
// already there is left alone: it names this Seq (put before) or an
// earlier one, and either way the Key is stored.
func (s *Store) putKey(ctx context.Context, it *item) error {
	err := s.putNew(ctx, map[string]types.AttributeValue{
		attrPK: str(keyPrefix + it.Key), attrSK: num(0), "seq": num(it.SK),
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("putting the key item of seq %d: %w", it.SK, err)
	}
	return nil
}

// putNew is the only write the store makes: a PutItem that fails with
// ConditionalCheckFailedException when the item exists.
func (s *Store) putNew(ctx context.Context, av map[string]types.AttributeValue) error {
	_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                av,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	return err
}

// keySeq returns the Seq stored under key, 0 when none.
func (s *Store) keySeq(ctx context.Context, key string) (uint64, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: keyOf(keyPrefix + key), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("looking up key: %w", err)
	}
	var k struct {
		Seq uint64 `dynamodbav:"seq"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &k); err != nil {
		return 0, fmt.Errorf("looking up key: %w", err)
	}
	return k.Seq, nil
}

// readLegacyHead reads the head item a hash-chain table kept (zero when
// there is none: a table created by this version).
func (s *Store) readLegacyHead(ctx context.Context) (legacyHead, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: keyOf(pkHead), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return legacyHead{}, fmt.Errorf("reading the legacy head item: %w", err)
	}
	var h legacyHead
	if err := attributevalue.UnmarshalMap(out.Item, &h); err != nil {
		return legacyHead{}, fmt.Errorf("reading the legacy head item: %w", err)
	}
	return h, nil
}

// migrate finishes the record a hash-chain writer left pending in the
// legacy head item, if it is the next one: put as a record like any other.
// The head item itself is never changed.
func (s *Store) migrate(ctx context.Context) error {
	h, err := s.readLegacyHead(ctx)
	if err != nil || h.Pending == nil {
		return err
	}
	last, err := s.last(ctx)
	if err != nil {
		return err
	}
	if (last == nil && h.Pending.SK != 1) || (last != nil && (last.SK+1 != h.Pending.SK || last.Hash != h.Pending.PrevHash)) {
		return nil // completed or withdrawn by the old protocol
	}
	if seq, err := s.keySeq(ctx, h.Pending.Key); err != nil || seq != 0 {
		return err // a duplicate: the old protocol would have withdrawn it
	}
	p := *h.Pending
	p.PK = pkRec
	if _, err := s.putRecord(ctx, &p); err != nil {
		return err
	}
	return s.putKey(ctx, &p)
}

func isConditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}
