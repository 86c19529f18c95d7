package aws

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// call runs one provider method that ends in action against a fresh fake.
type retryCase struct {
	name   string
	action string
	status int
	code   string // "" for a bare status with no body
	times  int
}

func TestTransientErrorsAreRetried(t *testing.T) {
	tests := []retryCase{
		// EC2 throttles with RequestLimitExceeded; a 400 proves the code
		// alone makes it retryable.
		{name: "EC2 RequestLimitExceeded", action: "RebootInstances", status: http.StatusBadRequest, code: "RequestLimitExceeded", times: 3},
		{name: "EC2 503", action: "DescribeInstances", status: http.StatusServiceUnavailable, times: 2},
		{name: "EC2 InternalError", action: "RebootInstances", status: http.StatusInternalServerError, code: "InternalError", times: 2},
		{name: "ASG Throttling on describe", action: "DescribeAutoScalingInstances", status: http.StatusBadRequest, code: "Throttling", times: 3},
		{name: "ASG Throttling on terminate", action: "TerminateInstanceInAutoScalingGroup", status: http.StatusBadRequest, code: "Throttling", times: 3},
		{name: "ASG ResourceContention", action: "TerminateInstanceInAutoScalingGroup", status: http.StatusBadRequest, code: "ResourceContention", times: 2},
		{name: "ASG 503", action: "TerminateInstanceInAutoScalingGroup", status: http.StatusServiceUnavailable, times: 1},
		{name: "ASG Throttling on set protection", action: "SetInstanceProtection", status: http.StatusBadRequest, code: "Throttling", times: 3},
		{name: "ASG ResourceContention on set protection", action: "SetInstanceProtection", status: http.StatusBadRequest, code: "ResourceContention", times: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAWS(t)
			f.add(instA, inGroup("us-east-1a"))
			f.fail(tt.action, tt.times, tt.status, tt.code)
			if err := runFor(t, newTestProvider(t, f), tt.action); err != nil {
				t.Fatalf("after %d injected failures: %v", tt.times, err)
			}
			if n := len(f.callsOf(tt.action)); n != tt.times+1 {
				t.Errorf("%s called %d times, want %d (failures) + 1", tt.action, n, tt.times)
			}
		})
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	tests := []retryCase{
		{name: "EC2 UnauthorizedOperation", action: "RebootInstances", status: http.StatusForbidden, code: "UnauthorizedOperation"},
		{name: "ASG AccessDenied on describe", action: "DescribeAutoScalingInstances", status: http.StatusForbidden, code: "AccessDenied"},
		{name: "ASG AccessDenied on terminate", action: "TerminateInstanceInAutoScalingGroup", status: http.StatusForbidden, code: "AccessDenied"},
		{name: "ASG AccessDenied on set protection", action: "SetInstanceProtection", status: http.StatusForbidden, code: "AccessDenied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAWS(t)
			f.add(instA, inGroup("us-east-1a"))
			f.fail(tt.action, 100, tt.status, tt.code)
			err := runFor(t, newTestProvider(t, f), tt.action)
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if ae.Code != tt.code || ae.HTTPStatus != tt.status || ae.Op != tt.action {
				t.Errorf("Error{Op: %q, Code: %q, HTTPStatus: %d}, want {%q, %q, %d}", ae.Op, ae.Code, ae.HTTPStatus, tt.action, tt.code, tt.status)
			}
			for _, want := range []string{"gpu-1", instA, tt.code} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			if n := len(f.callsOf(tt.action)); n != 1 {
				t.Errorf("%s called %d times, want 1: a permanent error is not retried", tt.action, n)
			}
			if got := f.instance(instA).Terminations; got != 0 {
				t.Errorf("instance terminated %d times, want 0", got)
			}
		})
	}
}

func TestRetriesStopAtMaxAttempts(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, inGroup("us-east-1a"))
	f.fail("RebootInstances", 100, http.StatusServiceUnavailable, "RequestLimitExceeded")
	p := newTestProvider(t, f, WithMaxAttempts(3))

	err := runFor(t, p, "RebootInstances")
	var ae *Error
	var maxErr *retry.MaxAttemptsError
	if !errors.As(err, &ae) || ae.Code != "RequestLimitExceeded" || !errors.As(err, &maxErr) {
		t.Fatalf("err = %v, want *Error with code RequestLimitExceeded wrapping retry.MaxAttemptsError", err)
	}
	if n := len(f.callsOf("RebootInstances")); n != 3 {
		t.Errorf("RebootInstances called %d times, want 3", n)
	}
}

// runFor calls the provider method whose path includes action, for gpu-1
// on instA in us-east-1a.
func runFor(t *testing.T, p *Provider, action string) error {
	t.Helper()
	node := gpuNode("gpu-1", "aws:///us-east-1a/"+instA)
	var err error
	switch action {
	case "RebootInstances":
		_, err = p.Reboot(t.Context(), node, "nr-1")
	case "DescribeInstances":
		_, err = p.Status(t.Context(), node)
	case "DescribeAutoScalingInstances", "TerminateInstanceInAutoScalingGroup":
		_, err = p.Replace(t.Context(), node, "nr-1")
	case "SetInstanceProtection":
		err = p.SetScaleInProtection(t.Context(), node, true)
	default:
		t.Fatalf("no provider method calls %s", action)
	}
	return err
}
