//go:build integration

package dynamo

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/audittest"
)

// An identity allowed DeleteItem and unconditional PutItem on the table
// (an admin, not the controller's least-privilege role) rewrites it.
func TestSignedHeadFindsAttacks(t *testing.T) {
	client := forTest(t)
	n := 0
	audittest.Run(t, func(t *testing.T) (audittest.Store, audittest.Tamper) {
		n++
		table := fmt.Sprintf("audit%d", n)
		s := newStore(t, client, table)
		return s, func(t *testing.T, recs []audit.Record) audit.Reader {
			ctx := context.Background()
			err := s.Since(ctx, 0, func(r *audit.Record) error {
				for _, pk := range []string{pkRec, keyPrefix + r.Key} {
					sk := uint64(0)
					if pk == pkRec {
						sk = r.Seq
					}
					if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table),
						Key: map[string]types.AttributeValue{attrPK: str(pk), attrSK: num(sk)}}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs {
				av, _ := attributevalue.MarshalMap(toItem(&recs[i]))
				if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: av}); err != nil {
					t.Fatal(err)
				}
			}
			ro, err := Open(ctx, client, table, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return ro
		}
	})
}
