package aws

import (
	"errors"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/internal/provider"
)

const (
	instA = "i-0123456789abcdef0"
	instB = "i-0fedcba9876543210"
)

// newTestProvider talks to f with static credentials and a millisecond
// backoff cap, so retries take no noticeable time.
func newTestProvider(t *testing.T, f *fakeAWS, opts ...Option) *Provider {
	t.Helper()
	cfg := awssdk.Config{
		// A region no node is in: calls must take theirs from the node.
		Region:      "eu-west-3",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		HTTPClient:  f.HTTPClient,
	}
	all := append([]Option{
		WithConfig(cfg),
		WithEC2Endpoint(f.URL),
		WithAutoScalingEndpoint(f.URL),
		WithSTSEndpoint(f.URL),
		WithMaxBackoff(time.Millisecond),
	}, opts...)
	p, err := New(t.Context(), all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func gpuNode(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestName(t *testing.T) {
	if got := newTestProvider(t, newFakeAWS(t)).Name(); got != provider.AWS {
		t.Errorf("Name() = %q, want %q", got, provider.AWS)
	}
}

func TestRebootReturnsRequestID(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a"})
	p := newTestProvider(t, f)

	id, err := p.Reboot(t.Context(), gpuNode("gpu-1", "aws:///us-east-1a/"+instA), "nr-1")
	if err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	calls := f.callsOf("")
	if len(calls) != 1 || calls[0].Action != "RebootInstances" {
		t.Fatalf("calls = %+v, want one RebootInstances", calls)
	}
	c := calls[0]
	if id != c.RequestID {
		t.Errorf("Reboot returned request id %q, want EC2's %q", id, c.RequestID)
	}
	if got := c.Form.Get("InstanceId.1"); got != instA {
		t.Errorf("InstanceId.1 = %q, want %q", got, instA)
	}
	if c.Region != "us-east-1" || c.Service != "ec2" {
		t.Errorf("signed for %s/%s, want us-east-1/ec2", c.Region, c.Service)
	}
	if got := f.instance(instA).Reboots; got != 1 {
		t.Errorf("instance rebooted %d times, want 1", got)
	}
}

func TestRebootRepeatedForSameIncidentRebootsOnce(t *testing.T) {
	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a"})
	p := newTestProvider(t, f)
	node := gpuNode("gpu-1", "aws:///us-east-1a/"+instA)

	first, err := p.Reboot(t.Context(), node, "nr-1")
	if err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	again, err := p.Reboot(t.Context(), node, "nr-1")
	if err != nil {
		t.Fatalf("repeated Reboot: %v", err)
	}
	if again != first {
		t.Errorf("repeated Reboot returned %q, want the first request id %q", again, first)
	}
	if got := f.instance(instA).Reboots; got != 1 {
		t.Fatalf("instance rebooted %d times for one incident, want 1", got)
	}
	// A new incident is a new reboot.
	if _, err := p.Reboot(t.Context(), node, "nr-2"); err != nil {
		t.Fatalf("Reboot for a second incident: %v", err)
	}
	if got := f.instance(instA).Reboots; got != 2 {
		t.Errorf("instance rebooted %d times for two incidents, want 2", got)
	}
}

func TestRebootUnknownInstanceIsNotFound(t *testing.T) {
	f := newFakeAWS(t)
	p := newTestProvider(t, f)
	_, err := p.Reboot(t.Context(), gpuNode("gpu-1", "aws:///us-east-1a/"+instA), "nr-1")
	if !errors.Is(err, provider.ErrNotFound) {
		t.Fatalf("Reboot of an unknown instance: err = %v, want provider.ErrNotFound", err)
	}
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != codeInstanceNotFound {
		t.Errorf("err = %v, want *Error with code %s", err, codeInstanceNotFound)
	}
}

func TestMalformedProviderIDMakesNoCall(t *testing.T) {
	f := newFakeAWS(t)
	p := newTestProvider(t, f)
	node := gpuNode("gpu-9", "aws:///us-east-1a/not-an-instance")
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, ErrMalformedProviderID) {
			t.Errorf("%s: err = %v, want ErrMalformedProviderID", op, err)
			return
		}
		for _, want := range []string{"gpu-9", node.Spec.ProviderID} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %q", op, err, want)
			}
		}
	}
	_, err := p.Reboot(t.Context(), node, "nr-1")
	check("Reboot", err)
	_, err = p.Replace(t.Context(), node, "nr-1")
	check("Replace", err)
	_, err = p.Status(t.Context(), node)
	check("Status", err)
	if calls := f.callsOf(""); len(calls) != 0 {
		t.Errorf("made %d AWS calls for a malformed providerID, want none", len(calls))
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for name, opt := range map[string]Option{
		"zero attempts":      WithMaxAttempts(0),
		"negative backoff":   WithMaxBackoff(-time.Second),
		"endpoint no scheme": WithEC2Endpoint("vpce-123.ec2.us-east-1.vpce.amazonaws.com"),
		"endpoint ftp":       WithAutoScalingEndpoint("ftp://example.com"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(t.Context(), WithConfig(awssdk.Config{}), opt); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

func TestNewUsesDefaultCredentialChain(t *testing.T) {
	// Keep the test off the machine's own AWS setup and off IMDS.
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")

	f := newFakeAWS(t)
	f.add(instA, fakeInstance{State: "running", Zone: "us-east-1a"})
	p, err := New(t.Context(), WithEC2Endpoint(f.URL), WithAutoScalingEndpoint(f.URL))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := p.Status(t.Context(), gpuNode("gpu-1", "aws:///us-east-1a/"+instA)); err != nil {
		t.Fatalf("Status: %v", err)
	}
	if got := f.callsOf("DescribeInstances")[0].AccessKey; got != "AKIDFROMENV" {
		t.Errorf("signed with access key %q, want the one from the environment", got)
	}
}
