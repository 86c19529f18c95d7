package dynamo

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// Attribute and index names. One table holds three kinds of item, told
// apart by the partition key:
//
//	pk "head", sk 0        the chain head: seq, hash, and the pending record
//	pk "rec",  sk <seq>    a record
//	pk "key#<key>", sk 0   the idempotency index: key → seq
const (
	attrPK, attrSK = "pk", "sk"
	pkHead, pkRec  = "head", "rec"
	keyPrefix      = "key#"
	indexNode      = "node-ts"
	indexIncident  = "incident-ts"
)

// item is a record as stored. Empty strings are left out: GSI keys may
// not be empty, and nothing else needs them.
type item struct {
	PK        string   `dynamodbav:"pk"`
	SK        uint64   `dynamodbav:"sk"`
	Seq       uint64   `dynamodbav:"seq"`
	Key       string   `dynamodbav:"key"`
	TS        int64    `dynamodbav:"ts"`
	Incident  string   `dynamodbav:"incident,omitempty"`
	Node      string   `dynamodbav:"node,omitempty"`
	Policy    string   `dynamodbav:"policy,omitempty"`
	Kind      string   `dynamodbav:"kind"`
	Phase     string   `dynamodbav:"phase,omitempty"`
	Action    string   `dynamodbav:"action,omitempty"`
	Reason    string   `dynamodbav:"reason,omitempty"`
	Message   string   `dynamodbav:"message,omitempty"`
	Provider  string   `dynamodbav:"provider,omitempty"`
	RequestID string   `dynamodbav:"requestID,omitempty"`
	Pod       string   `dynamodbav:"pod,omitempty"`
	Duration  int64    `dynamodbav:"duration,omitempty"`
	GPUs      []string `dynamodbav:"gpus,omitempty"`
	Severity  string   `dynamodbav:"severity,omitempty"`
	DryRun    bool     `dynamodbav:"dryRun,omitempty"`
	Machine   string   `dynamodbav:"machine,omitempty"`
	PrevHash  string   `dynamodbav:"prevHash,omitempty"`
	Hash      string   `dynamodbav:"hash"`
}

func toItem(r *audit.Record) item {
	return item{
		PK: pkRec, SK: r.Seq, Seq: r.Seq, Key: r.Key, TS: r.Time.UnixNano(), Incident: r.Incident, Node: r.Node,
		Policy: r.Policy, Kind: string(r.Kind), Phase: r.Phase, Action: r.Action, Reason: r.Reason,
		Message: r.Message, Provider: r.Provider, RequestID: r.RequestID, Pod: r.Pod,
		Duration: int64(r.Duration), GPUs: r.GPUs, Severity: r.Severity, DryRun: r.DryRun,
		Machine: r.Machine, PrevHash: r.PrevHash, Hash: r.Hash,
	}
}

func (it *item) record() audit.Record {
	r := audit.Record{
		Seq: it.SK, Key: it.Key, Time: audit.TimeFromNanos(it.TS), Incident: it.Incident, Node: it.Node,
		Policy: it.Policy, Kind: audit.Kind(it.Kind), Phase: it.Phase, Action: it.Action, Reason: it.Reason,
		Message: it.Message, Provider: it.Provider, RequestID: it.RequestID, Pod: it.Pod,
		Duration: time.Duration(it.Duration), GPUs: it.GPUs, Severity: it.Severity, DryRun: it.DryRun,
		Machine: it.Machine, PrevHash: it.PrevHash, Hash: it.Hash,
	}
	if len(r.GPUs) == 0 {
		r.GPUs = nil
	}
	return r
}

func unmarshalItems(avs []map[string]types.AttributeValue) ([]item, error) {
	var its []item
	if err := attributevalue.UnmarshalListOfMaps(avs, &its); err != nil {
		return nil, err
	}
	return its, nil
}

func keyOf(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberN{Value: "0"},
	}
}

func num(n uint64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(n, 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
