// Package dynamo is the audit store in a DynamoDB table.
//
// DynamoDB has no multi-item transaction that every compatible server
// offers, so an append is a small protocol on single-item conditional
// writes. The head item is the commit point: a writer first claims the
// next Seq by putting the whole sealed record into the head as "pending"
// (condition: the head is still the one it read, with nothing pending);
// then anyone who sees a pending record completes it: claim its Key
// (conditional put of the key item, attribute_not_exists — if the Key
// already belongs to another Seq the pending record is a duplicate and is
// withdrawn), put the record item, and move the head to it (condition: the
// same record is still pending). Two writers can therefore not fork the
// chain, a writer that dies half-way is finished by the next one, and a
// Key is stored once.
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
	mu    sync.Mutex // one append at a time from this process
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

// head is the head item.
type head struct {
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
	for i := range prepared {
		if err := s.append(ctx, &prepared[i]); err != nil {
			return fmt.Errorf("writing audit record %s to table %s: %w", prepared[i].Key, s.table, err)
		}
	}
	return nil
}

func (s *Store) append(ctx context.Context, r *audit.Record) error {
	for range s.o.MaxAttempts {
		h, err := s.readHead(ctx)
		if err != nil {
			return err
		}
		if h.Pending != nil {
			if err := s.complete(ctx, h.Pending); err != nil {
				return err
			}
			continue
		}
		seq, err := s.keySeq(ctx, r.Key)
		if err != nil {
			return err
		}
		if seq != 0 {
			return nil // stored before
		}
		sealed := *r
		audit.Seal(audit.Head{Seq: h.Seq, Hash: h.Hash}, &sealed)
		p := toItem(&sealed)
		claimed, err := s.claim(ctx, h, &p)
		if err != nil {
			return err
		}
		if !claimed {
			continue // another writer moved the head; start over
		}
		if err := s.complete(ctx, &p); err != nil {
			return err
		}
		// complete may have withdrawn p as a duplicate of a Key written
		// meanwhile; the next round sees the Key and returns.
	}
	return fmt.Errorf("gave up after %d attempts: other writers kept moving the chain head", s.o.MaxAttempts)
}

func (s *Store) readHead(ctx context.Context) (head, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: keyOf(pkHead), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return head{}, fmt.Errorf("reading the chain head: %w", err)
	}
	var h head
	if err := attributevalue.UnmarshalMap(out.Item, &h); err != nil {
		return head{}, fmt.Errorf("reading the chain head: %w", err)
	}
	return h, nil
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

// claim makes p the pending record if the head is still h.
func (s *Store) claim(ctx context.Context, h head, p *item) (bool, error) {
	av, err := attributevalue.MarshalMap(p)
	if err != nil {
		return false, err
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(pkHead),
		UpdateExpression:          aws.String("SET #pending = :p"),
		ExpressionAttributeNames:  map[string]string{"#pending": "pending", "#seq": "seq"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberM{Value: av}},
	}
	if h.Seq == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#seq) AND attribute_not_exists(#pending)")
	} else {
		in.ConditionExpression = aws.String("#seq = :seq AND #hash = :hash AND attribute_not_exists(#pending)")
		in.ExpressionAttributeValues[":seq"] = num(h.Seq)
		in.ExpressionAttributeValues[":hash"] = str(h.Hash)
		in.ExpressionAttributeNames["#hash"] = "hash"
	}
	_, err = s.api.UpdateItem(ctx, in)
	if isConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claiming seq %d: %w", p.SK, err)
	}
	return true, nil
}

// complete finishes the pending record p; any writer may call it, any
// number of times.
func (s *Store) complete(ctx context.Context, p *item) error {
	_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrPK: str(keyPrefix + p.Key), attrSK: num(0), "seq": num(p.SK),
		},
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR #seq = :seq"),
		ExpressionAttributeNames:  map[string]string{"#seq": "seq"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":seq": num(p.SK)},
	})
	if isConditionFailed(err) {
		// The Key belongs to another record: this one is a duplicate.
		return s.moveHead(ctx, p, "REMOVE #pending", nil)
	}
	if err != nil {
		return fmt.Errorf("claiming key for seq %d: %w", p.SK, err)
	}
	av, err := attributevalue.MarshalMap(p)
	if err != nil {
		return err
	}
	// Unconditional: every completer writes the same content.
	if _, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: av}); err != nil {
		return fmt.Errorf("putting record seq %d: %w", p.SK, err)
	}
	return s.moveHead(ctx, p, "SET #seq = :seq, #hash = :hash REMOVE #pending", map[string]types.AttributeValue{
		":seq": num(p.SK), ":hash": str(p.Hash),
	})
}

// moveHead applies update to the head if p is still pending there.
func (s *Store) moveHead(ctx context.Context, p *item, update string, vals map[string]types.AttributeValue) error {
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	vals[":ph"] = str(p.Hash)
	names := map[string]string{"#hash": "hash", "#pending": "pending"}
	if _, ok := vals[":seq"]; ok {
		names["#seq"] = "seq"
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(pkHead),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("#pending.#hash = :ph"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	if err != nil && !isConditionFailed(err) { // failed condition: done by another writer
		return fmt.Errorf("moving the chain head to seq %d: %w", p.SK, err)
	}
	return nil
}

func isConditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}
