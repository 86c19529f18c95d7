//go:build integration

package dynamo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/audit"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)

func newStore(t *testing.T, client *dynamodb.Client, table string) *Store {
	t.Helper()
	ctx := context.Background()
	if err := CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, client, table, Options{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rec(i int, node string) audit.Record {
	return audit.Record{
		Key: audit.Key(node+"-inc", "step", i), Time: t0.Add(time.Duration(i) * time.Second),
		Incident: node + "-inc", Node: node, Policy: "default", Kind: audit.Evicted,
		Pod: fmt.Sprintf("ns/p%d", i), Message: "evicted",
	}
}

func TestDynamoStore(t *testing.T) {
	client := forTest(t)
	ctx := context.Background()
	s := newStore(t, client, "audit")
	if err := CreateTable(ctx, client, "audit"); err != nil { // again: a no-op
		t.Fatalf("second CreateTable: %v", err)
	}
	full := audit.Record{
		Key: "gpu-a-inc/ActionRequested/1", Time: t0.Add(time.Minute), Incident: "gpu-a-inc", Node: "gpu-a",
		Policy: "default", Kind: audit.ActionRequested, Phase: "Replacing", Action: "Replace", Reason: "NvidiaXID79Error",
		Message: "terminating i-0abc", Provider: "aws", RequestID: "req-42", Duration: 1500 * time.Millisecond,
		GPUs: []string{"GPU-1", "GPU-2"}, Severity: audit.SeverityCritical, DryRun: true, Machine: "i-0abc123def4567890",
	}
	if err := s.Write(ctx, rec(0, "gpu-a"), rec(1, "gpu-b"), full); err != nil {
		t.Fatal(err)
	}
	// Repeated keys are skipped, in a later call and inside one call.
	if err := s.Write(ctx, rec(1, "gpu-b"), rec(2, "gpu-a"), rec(2, "gpu-a"), audit.Record{Key: "held/1", Kind: audit.Held}); err != nil {
		t.Fatal(err)
	}

	got, err := s.Query(ctx, audit.Filter{Node: "gpu-a"})
	if err != nil {
		t.Fatal(err)
	}
	want := full
	want.Seq, want.PrevHash = 3, got[1].PrevHash // the hash of gpu-b's record 2
	want.Hash = audit.ComputeHash(&want)
	if len(got) != 3 || got[0].Seq != 1 || got[2].Seq != 4 {
		t.Fatalf("Query(gpu-a) seqs %v", seqs(got))
	}
	if diff := cmp.Diff(want, got[1]); diff != "" {
		t.Errorf("record 3 (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		f    audit.Filter
		want []uint64
	}{
		{audit.Filter{Incident: "gpu-b-inc"}, []uint64{2}},
		{audit.Filter{Node: "gpu-a", Limit: 2}, []uint64{3, 4}},
		{audit.Filter{Node: "gpu-a", Since: t0.Add(time.Minute)}, []uint64{3}},
		{audit.Filter{Node: "gpu-a", Incident: "gpu-b-inc"}, nil},
		{audit.Filter{}, []uint64{1, 2, 3, 4, 5}},
		{audit.Filter{Limit: 1}, []uint64{5}},
	} {
		got, err := s.Query(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, seqs(got)); diff != "" {
			t.Errorf("Query(%+v) seqs (-want +got):\n%s", tc.f, diff)
		}
	}
	if got[0].Time != t0 {
		t.Errorf("time = %v", got[0].Time)
	}

	rep, err := s.Verify(ctx)
	if err != nil || !rep.OK || rep.Records != 5 || rep.Head.Seq != 5 {
		t.Fatalf("Verify = %v, %v", rep, err)
	}
	var buf bytes.Buffer
	if err := s.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 5 || !strings.Contains(buf.String(), `"gpus":["GPU-1","GPU-2"]`) {
		t.Errorf("Export: %d lines:\n%s", n, buf.String())
	}
}

func seqs(rs []audit.Record) []uint64 {
	var out []uint64
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

// Two controllers (two Stores, as two processes would have) append to one
// table at once, partly with the same keys: the chain does not fork and
// every key is stored once.
func TestDynamoConcurrentWritersDoNotFork(t *testing.T) {
	client := forTest(t)
	ctx := context.Background()
	a := newStore(t, client, "audit")
	b, err := Open(ctx, client, "audit", Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w, s := range []*Store{a, b, a, b} {
		wg.Go(func() {
			for i := range n {
				// Writers 0 and 1 write the same keys; 2 and 3 their own.
				node := fmt.Sprintf("n%d", w/2*(w+1))
				if err := s.Write(ctx, rec(i, node)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep, err := a.Verify(ctx)
	if err != nil || !rep.OK || rep.Records != 3*n {
		t.Fatalf("Verify = %v, %v (want %d records)", rep, err, 3*n)
	}
	all, _ := a.Query(ctx, audit.Filter{Limit: -1})
	keys := map[string]int{}
	for _, r := range all {
		keys[r.Key]++
	}
	for k, c := range keys {
		if c != 1 {
			t.Errorf("key %s stored %d times", k, c)
		}
	}
}

// A writer that died between its record and its key item is completed by
// the next one, whose retry of the same record is then skipped.
func TestDynamoDeadWriterIsCompleted(t *testing.T) {
	client := forTest(t)
	ctx := context.Background()
	s := newStore(t, client, "audit")
	if err := s.Write(ctx, rec(0, "gpu-a")); err != nil {
		t.Fatal(err)
	}
	last, _ := s.last(ctx)
	dead := rec(1, "gpu-a")
	dead.Time = dead.Time.UTC()
	audit.Seal(audit.Head{Seq: last.SK, Hash: last.Hash}, &dead)
	it := toItem(&dead)
	if won, err := s.putRecord(ctx, &it); !won || err != nil {
		t.Fatalf("putRecord = %v, %v", won, err)
	}
	other, _ := Open(ctx, client, "audit", Options{})
	if err := other.Write(ctx, rec(1, "gpu-a"), rec(2, "gpu-a")); err != nil {
		t.Fatal(err)
	}
	all, _ := s.Query(ctx, audit.Filter{})
	var keys []string
	for _, r := range all {
		keys = append(keys, r.Key)
	}
	if diff := cmp.Diff([]string{"gpu-a-inc/step/0", "gpu-a-inc/step/1", "gpu-a-inc/step/2"}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if rep, _ := s.Verify(ctx); !rep.OK || rep.Head.Seq != 3 {
		t.Errorf("Verify = %v", rep)
	}
}

// The store never overwrites: a second record for a taken Seq, or another
// key item for a stored Key, is refused by DynamoDB itself, and the stored
// items stay as they were.
func TestDynamoRefusesOverwrite(t *testing.T) {
	client := forTest(t)
	ctx := context.Background()
	s := newStore(t, client, "audit")
	if err := s.Write(ctx, rec(0, "gpu-a"), rec(1, "gpu-a")); err != nil {
		t.Fatal(err)
	}
	forged := rec(9, "gpu-a")
	audit.Seal(audit.Head{Seq: 1}, &forged) // seq 2, taken
	av, _ := attributevalue.MarshalMap(toItem(&forged))
	err := s.putNew(ctx, av)
	var cf *types.ConditionalCheckFailedException
	if !errors.As(err, &cf) {
		t.Fatalf("overwriting seq 2: %v, want ConditionalCheckFailedException", err)
	}
	if won, err := s.putRecord(ctx, ptr(toItem(&forged))); won || err != nil {
		t.Fatalf("putRecord over seq 2 = %v, %v; want refused", won, err)
	}
	err = s.putNew(ctx, map[string]types.AttributeValue{attrPK: str(keyPrefix + rec(0, "gpu-a").Key), attrSK: num(0), "seq": num(2)})
	if !errors.As(err, &cf) {
		t.Fatalf("overwriting a key item: %v, want ConditionalCheckFailedException", err)
	}
	all, _ := s.Query(ctx, audit.Filter{})
	if len(all) != 2 || all[1].Key != rec(1, "gpu-a").Key {
		t.Fatalf("records after the attempts: %v", all)
	}
	if seq, _ := s.keySeq(ctx, rec(0, "gpu-a").Key); seq != 1 {
		t.Errorf("key of seq 1 now names seq %d", seq)
	}
	if rep, _ := s.Verify(ctx); !rep.OK {
		t.Errorf("Verify = %v", rep)
	}
}

func ptr[T any](v T) *T { return &v }

// A table written by the hash-chain version may hold a record pending in
// its head item: the first write carries it over as the next record, and
// the head item is left as it was.
func TestDynamoCarriesOverALegacyPendingRecord(t *testing.T) {
	client := forTest(t)
	ctx := context.Background()
	s := newStore(t, client, "audit")
	if err := s.Write(ctx, rec(0, "gpu-a")); err != nil {
		t.Fatal(err)
	}
	last, _ := s.last(ctx)
	pending := rec(1, "gpu-a")
	audit.Seal(audit.Head{Seq: last.SK, Hash: last.Hash}, &pending)
	p, _ := attributevalue.MarshalMap(toItem(&pending))
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("audit"), Item: map[string]types.AttributeValue{
		attrPK: str(pkHead), attrSK: num(0), "seq": num(1), "hash": str(last.Hash), "pending": &types.AttributeValueMemberM{Value: p},
	}}); err != nil {
		t.Fatal(err)
	}
	fresh, _ := Open(ctx, client, "audit", Options{})
	if err := fresh.Write(ctx, rec(2, "gpu-a")); err != nil {
		t.Fatal(err)
	}
	all, _ := fresh.Query(ctx, audit.Filter{})
	var keys []string
	for _, r := range all {
		keys = append(keys, r.Key)
	}
	if diff := cmp.Diff([]string{"gpu-a-inc/step/0", "gpu-a-inc/step/1", "gpu-a-inc/step/2"}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if rep, _ := fresh.Verify(ctx); !rep.OK || rep.Head.Seq != 3 {
		t.Errorf("Verify = %v", rep)
	}
}

func TestDynamoVerifyFindsTampering(t *testing.T) {
	client := forTest(t)
	ctx := context.Background()
	getRec := func(table string, seq int) map[string]types.AttributeValue {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": str(pkRec), "sk": num(uint64(seq))}})
		if err != nil || out.Item == nil {
			t.Fatalf("GetItem %d: %v", seq, err)
		}
		return out.Item
	}
	put := func(table string, it map[string]types.AttributeValue) {
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		name    string
		tamper  func(table string)
		seq     uint64
		key     string
		problem string
	}{
		{"deleted middle record", func(table string) {
			_, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
				"pk": str(pkRec), "sk": num(5)}})
			if err != nil {
				t.Fatal(err)
			}
		}, 6, "gpu-a-inc/step/5", "records 5..5 are missing"},
		{"two records swapped", func(table string) {
			a, b := getRec(table, 4), getRec(table, 5)
			a["sk"], b["sk"] = num(5), num(4)
			put(table, a)
			put(table, b)
		}, 4, "gpu-a-inc/step/4", "prevHash"},
		{"message edited", func(table string) {
			it := getRec(table, 7)
			it["message"] = str("nothing happened")
			put(table, it)
		}, 7, "gpu-a-inc/step/6", "the record was edited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := fmt.Sprintf("audit%d", i)
			s := newStore(t, client, table)
			for j := range 10 {
				if err := s.Write(ctx, rec(j, "gpu-a")); err != nil {
					t.Fatal(err)
				}
			}
			tc.tamper(table)
			rep, err := s.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || rep.FirstBad.Seq != tc.seq || rep.FirstBad.Key != tc.key || !strings.Contains(rep.FirstBad.Problem, tc.problem) {
				t.Errorf("Verify = %v, want first bad seq %d key %s problem ~%q", rep, tc.seq, tc.key, tc.problem)
			}
		})
	}
}

func TestDynamoOpenRefusesForeignTable(t *testing.T) {
	client := forTest(t)
	ctx := context.Background()
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("theirs"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, client, "theirs", Options{}); !errors.Is(err, audit.ErrNotAuditStore) || !strings.Contains(err.Error(), "theirs") {
		t.Errorf("Open(theirs) = %v", err)
	}
	if err := CreateTable(ctx, client, "theirs"); !errors.Is(err, audit.ErrNotAuditStore) {
		t.Errorf("CreateTable(theirs) = %v", err)
	}
	if _, err := Open(ctx, client, "missing", Options{}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Open(missing) = %v", err)
	}
}
