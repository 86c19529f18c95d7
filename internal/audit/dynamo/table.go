package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// API is the part of the DynamoDB client the store uses;
// *dynamodb.Client implements it.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}

// CreateTable creates the audit table (on-demand capacity, keys pk/sk and
// the node and incident indexes) unless it exists, and waits until it and
// its indexes are ACTIVE or ctx ends. It needs dynamodb:CreateTable and
// dynamodb:DescribeTable.
func CreateTable(ctx context.Context, api API, table string) error {
	idx := func(name, hash string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("ts"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}
	}
	_, err := api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String("node"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("incident"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("ts"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{idx(indexNode, "node"), idx(indexIncident, "incident")},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("creating audit table %s: %w", table, err)
	}
	delay := 50 * time.Millisecond
	for {
		active, err := checkTable(ctx, api, table)
		if err != nil {
			return err
		}
		if active {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for audit table %s to become ACTIVE: %w", table, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// checkTable reports whether table is ACTIVE with its indexes, and refuses
// a table whose keys or indexes are not ours.
func checkTable(ctx context.Context, api API, table string) (active bool, err error) {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return false, fmt.Errorf("describing audit table %s: %w", table, err)
	}
	d := out.Table
	keys := map[string]types.KeyType{}
	for _, k := range d.KeySchema {
		keys[aws.ToString(k.AttributeName)] = k.KeyType
	}
	if len(keys) != 2 || keys[attrPK] != types.KeyTypeHash || keys[attrSK] != types.KeyTypeRange {
		return false, fmt.Errorf("audit table %s: %w: its key schema is not (pk HASH, sk RANGE)", table, audit.ErrNotAuditStore)
	}
	indexes := map[string]bool{}
	active = d.TableStatus == types.TableStatusActive
	for _, g := range d.GlobalSecondaryIndexes {
		indexes[aws.ToString(g.IndexName)] = true
		active = active && g.IndexStatus == types.IndexStatusActive
	}
	if !indexes[indexNode] || !indexes[indexIncident] {
		return false, fmt.Errorf("audit table %s: %w: it lacks the %s and %s indexes", table, audit.ErrNotAuditStore, indexNode, indexIncident)
	}
	return active, nil
}
