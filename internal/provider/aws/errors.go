package aws

import (
	"errors"
	"fmt"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/gpuheal/gpuheal/internal/provider"
)

// ErrNoAutoScalingGroup says the node's instance belongs to no Auto Scaling
// group, so terminating it would not bring a replacement. It wraps
// provider.ErrUnsupported: for this node, replace is not something the aws
// provider can do.
var ErrNoAutoScalingGroup = fmt.Errorf("%w: instance is in no Auto Scaling group", provider.ErrUnsupported)

// codeInstanceNotFound is EC2's answer for an instance id it does not know,
// which for a terminated instance happens about an hour after termination.
const codeInstanceNotFound = "InvalidInstanceID.NotFound"

// Error is a failed AWS call made for one node.
type Error struct {
	Op         string // the AWS action, e.g. RebootInstances
	Node       string
	InstanceID string
	Region     string
	// Code is AWS's error code (RequestLimitExceeded, UnauthorizedOperation,
	// AccessDenied, ...); empty when no answer came back from AWS.
	Code string
	// HTTPStatus is the status of the last response, 0 when there was none.
	HTTPStatus int
	Err        error

	kind error // a sentinel such as provider.ErrNotFound, for errors.Is
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = "no AWS error code"
	}
	if e.HTTPStatus != 0 {
		code = fmt.Sprintf("%s (HTTP %d)", code, e.HTTPStatus)
	}
	return fmt.Sprintf("%s for node %s (instance %s in %s): %s: %v", e.Op, e.Node, e.InstanceID, e.Region, code, e.Err)
}

// Unwrap lets errors.As reach the SDK's error (smithy.APIError,
// retry.MaxAttemptsError) and errors.Is reach the sentinel.
func (e *Error) Unwrap() []error {
	if e.kind == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.kind}
}

// callError wraps err from op made for the node's instance.
func callError(op, node string, in instance, err error) *Error {
	e := &Error{Op: op, Node: node, InstanceID: in.ID, Region: in.Region, Code: errorCode(err), Err: err}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		e.HTTPStatus = re.HTTPStatusCode()
	}
	if e.Code == codeInstanceNotFound {
		e.kind = provider.ErrNotFound
	}
	return e
}

// errorCode is AWS's code for err, or "" when AWS never answered.
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
