package aws

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseProviderID(t *testing.T) {
	tests := []struct {
		in      string
		want    instance
		wantErr string // substring; "" means success
	}{
		{in: "aws:///us-east-1a/i-0123456789abcdef0", want: instance{ID: "i-0123456789abcdef0", Zone: "us-east-1a", Region: "us-east-1"}},
		{in: "aws:///eu-central-1c/i-01234567", want: instance{ID: "i-01234567", Zone: "eu-central-1c", Region: "eu-central-1"}},
		{in: "aws:///us-west-2-lax-1a/i-0123456789abcdef0", want: instance{ID: "i-0123456789abcdef0", Zone: "us-west-2-lax-1a", Region: "us-west-2"}},
		{in: "aws:///us-east-1-wl1-bos-wlz-1/i-0123456789abcdef0", want: instance{ID: "i-0123456789abcdef0", Zone: "us-east-1-wl1-bos-wlz-1", Region: "us-east-1"}},
		{in: "aws:///us-gov-west-1a/i-0123456789abcdef0", want: instance{ID: "i-0123456789abcdef0", Zone: "us-gov-west-1a", Region: "us-gov-west-1"}},
		{in: "aws:///cn-north-1b/i-0123456789abcdef0", want: instance{ID: "i-0123456789abcdef0", Zone: "cn-north-1b", Region: "cn-north-1"}},
		{in: "aws:///ap-southeast-12a/i-0123456789abcdef0", want: instance{ID: "i-0123456789abcdef0", Zone: "ap-southeast-12a", Region: "ap-southeast-12"}},

		{in: "", wantErr: "does not start with aws:///"},
		{in: "kwok://node-1", wantErr: "does not start with aws:///"},
		{in: "aws://us-east-1a/i-0123456789abcdef0", wantErr: "does not start with aws:///"},
		{in: "aws:///i-0123456789abcdef0", wantErr: "has no availability zone"},
		{in: "aws:////i-0123456789abcdef0", wantErr: `"" is not an availability zone`},
		{in: "aws:///us-east-1/i-0123456789abcdef0", wantErr: `"us-east-1" is not an availability zone`},
		{in: "aws:///US-EAST-1A/i-0123456789abcdef0", wantErr: "is not an availability zone"},
		{in: "aws:///us-east-1a/", wantErr: `"" is not an EC2 instance id`},
		{in: "aws:///us-east-1a/i-0123", wantErr: "is not an EC2 instance id"},
		{in: "aws:///us-east-1a/i-0123456789ABCDEF0", wantErr: "is not an EC2 instance id"},
		{in: "aws:///us-east-1a/i-0123456789abcdef0/extra", wantErr: "is not an EC2 instance id"},
		{in: "aws:///us-east-1a/fargate-ip-10-0-0-1", wantErr: "is not an EC2 instance id"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseProviderID(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrMalformedProviderID) {
					t.Fatalf("parseProviderID(%q) = %+v, %v; want ErrMalformedProviderID containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseProviderID(%q): %v", tt.in, err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("parseProviderID(%q) (-want +got):\n%s", tt.in, d)
			}
		})
	}
}

func TestInstanceOfNamesNodeAndValue(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-7"}, Spec: corev1.NodeSpec{ProviderID: "aws:///nowhere/i-1"}}
	_, err := instanceOf(node)
	if err == nil {
		t.Fatal("instanceOf accepted a malformed providerID")
	}
	for _, want := range []string{"node gpu-7", `"aws:///nowhere/i-1"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// FuzzParseProviderID checks that whatever it accepts reads back exactly,
// with a region that is a proper prefix of the zone.
func FuzzParseProviderID(f *testing.F) {
	for _, s := range []string{
		"aws:///us-east-1a/i-0123456789abcdef0",
		"aws:///us-west-2-lax-1a/i-01234567",
		"aws:///us-east-1-wl1-bos-wlz-1/i-0123456789abcdef0",
		"aws:///i-0123456789abcdef0",
		"aws:////",
		"kwok://x",
		"aws:///a-b-1a/i-00000000/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, err := parseProviderID(s)
		if err != nil {
			if !errors.Is(err, ErrMalformedProviderID) {
				t.Fatalf("parseProviderID(%q) error %v is not ErrMalformedProviderID", s, err)
			}
			return
		}
		if got := providerIDPrefix + in.Zone + "/" + in.ID; got != s {
			t.Fatalf("parseProviderID(%q) = %+v, which reads back as %q", s, in, got)
		}
		if in.Region == "" || in.Region == in.Zone || !strings.HasPrefix(in.Zone, in.Region) {
			t.Fatalf("parseProviderID(%q): region %q is not a proper prefix of zone %q", s, in.Region, in.Zone)
		}
		if !instanceIDRE.MatchString(in.ID) {
			t.Fatalf("parseProviderID(%q): accepted instance id %q", s, in.ID)
		}
	})
}
