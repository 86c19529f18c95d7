package dynamo

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// Query returns the newest records matching f, oldest first, through the
// node or incident index (dynamodb:Query).
func (s *Store) Query(ctx context.Context, f audit.Filter) ([]audit.Record, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		ScanIndexForward:          aws.Bool(false),
		ExpressionAttributeNames:  map[string]string{},
		ExpressionAttributeValues: map[string]types.AttributeValue{},
	}
	var filters []string
	since := ""
	if !f.Since.IsZero() {
		in.ExpressionAttributeNames["#ts"] = "ts"
		in.ExpressionAttributeValues[":since"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(f.Since.UnixNano(), 10)}
		since = " AND #ts >= :since"
	}
	switch {
	case f.Node != "":
		in.IndexName = aws.String(indexNode)
		in.KeyConditionExpression = aws.String("#node = :node" + since)
		in.ExpressionAttributeNames["#node"] = "node"
		in.ExpressionAttributeValues[":node"] = str(f.Node)
		if f.Incident != "" {
			filters = append(filters, "#inc = :inc")
		}
	case f.Incident != "":
		in.IndexName = aws.String(indexIncident)
		in.KeyConditionExpression = aws.String("#inc = :inc" + since)
	default:
		in.KeyConditionExpression = aws.String("pk = :pk")
		in.ExpressionAttributeValues[":pk"] = str(pkRec)
		in.ConsistentRead = aws.Bool(true)
		if since != "" {
			filters = append(filters, "#ts >= :since")
		}
	}
	if f.Incident != "" {
		in.ExpressionAttributeNames["#inc"] = "incident"
		in.ExpressionAttributeValues[":inc"] = str(f.Incident)
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(filters[0])
	}
	limit := f.EffectiveLimit()
	var out []audit.Record
	err := s.pages(ctx, in, func(its []item) bool {
		for i := range its {
			out = append(out, its[i].record())
			if limit > 0 && len(out) == limit {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("querying audit table %s: %w", s.table, err)
	}
	slices.SortFunc(out, func(a, b audit.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// Since implements audit.Tailer: the records after seq after, in order.
func (s *Store) Since(ctx context.Context, after uint64, fn func(*audit.Record) error) error {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("pk = :pk AND sk > :after"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(pkRec), ":after": num(after),
		},
		ConsistentRead: aws.Bool(true),
	}
	var ferr error
	err := s.pages(ctx, in, func(its []item) bool {
		for i := range its {
			r := its[i].record()
			if ferr = fn(&r); ferr != nil {
				return false
			}
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("reading audit table %s after seq %d: %w", s.table, after, err)
	}
	return nil
}

// Verify walks every record in Seq order and checks the chain. A table
// carried over from the hash chain also still has its legacy head item:
// the records must reach at least that far.
func (s *Store) Verify(ctx context.Context) (audit.Report, error) {
	var v audit.Verifier
	err := s.Since(ctx, 0, func(r *audit.Record) error {
		if !v.Add(r) {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return audit.Report{}, fmt.Errorf("verifying audit table %s: %w", s.table, err)
	}
	rep := v.Finish(nil)
	h, err := s.readLegacyHead(ctx)
	if err != nil {
		return audit.Report{}, fmt.Errorf("verifying audit table %s: %w", s.table, err)
	}
	if rep.OK && h.Seq > rep.Head.Seq {
		return v.Finish(&audit.Head{Seq: h.Seq, Hash: h.Hash}), nil
	}
	return rep, nil
}

var errStop = errors.New("stop")

// Export writes the chain as JSON lines, oldest first.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriter(w)
	lw := audit.NewLineWriter(bw)
	err := s.Since(ctx, 0, lw.Write)
	if err != nil {
		return fmt.Errorf("exporting audit table %s: %w", s.table, err)
	}
	return bw.Flush()
}

func (s *Store) pages(ctx context.Context, in *dynamodb.QueryInput, fn func([]item) bool) error {
	if len(in.ExpressionAttributeNames) == 0 {
		in.ExpressionAttributeNames = nil
	}
	p := dynamodb.NewQueryPaginator(s.api, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		its, err := unmarshalItems(out.Items)
		if err != nil {
			return err
		}
		if !fn(its) {
			return nil
		}
	}
	return nil
}
