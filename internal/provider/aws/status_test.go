package aws

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/provider"
)

func TestStatusMapsEC2States(t *testing.T) {
	tests := []struct {
		ec2State string // "" means EC2 does not know the instance
		want     provider.State
	}{
		{"pending", provider.StateRunning},
		{"running", provider.StateRunning},
		{"stopping", provider.StateTerminating},
		{"shutting-down", provider.StateTerminating},
		{"terminated", provider.StateGone},
		{"stopped", provider.StateUnknown},
		{"", provider.StateGone},
	}
	for _, tt := range tests {
		t.Run(tt.ec2State, func(t *testing.T) {
			f := newFakeAWS(t)
			if tt.ec2State != "" {
				f.add(instA, fakeInstance{State: tt.ec2State, Zone: "us-east-1a"})
			}
			st, err := newTestProvider(t, f).Status(t.Context(), gpuNode("gpu-1", "aws:///us-east-1a/"+instA))
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			if st.State != tt.want || st.ID != instA {
				t.Errorf("Status = %+v, want State %s, ID %s", st, tt.want, instA)
			}
			if tt.ec2State != "" && !strings.Contains(st.Detail, "EC2 state "+tt.ec2State) {
				t.Errorf("Detail %q does not give the EC2 state %s", st.Detail, tt.ec2State)
			}
		})
	}
}

// Calls go to the region of each node's zone, and one provider serves many
// regions at once.
func TestCallsGoToEachNodesRegion(t *testing.T) {
	f := newFakeAWS(t)
	zones := map[string]string{ // instance → zone
		"i-00000000000000001": "us-east-1a",
		"i-00000000000000002": "us-west-2-lax-1a",
		"i-00000000000000003": "eu-central-1b",
		"i-00000000000000004": "us-east-1-wl1-bos-wlz-1",
	}
	for id, zone := range zones {
		f.add(id, fakeInstance{State: "running", Zone: zone})
	}
	p := newTestProvider(t, f)

	var wg sync.WaitGroup
	errs := make(chan error, 4*len(zones))
	for id, zone := range zones {
		for range 4 {
			wg.Go(func() {
				if _, err := p.Status(t.Context(), gpuNode("gpu-"+id, fmt.Sprintf("aws:///%s/%s", zone, id))); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	got := map[string]string{} // instance → signing region
	for _, c := range f.callsOf("DescribeInstances") {
		id := c.Form.Get("InstanceId.1")
		if prev, ok := got[id]; ok && prev != c.Region {
			t.Errorf("%s signed for both %s and %s", id, prev, c.Region)
		}
		got[id] = c.Region
	}
	want := map[string]string{
		"i-00000000000000001": "us-east-1",
		"i-00000000000000002": "us-west-2",
		"i-00000000000000003": "eu-central-1",
		"i-00000000000000004": "us-east-1",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("signing region per instance (-want +got):\n%s", d)
	}
	if n := len(p.byRegion); n != 3 {
		t.Errorf("provider holds clients for %d regions, want 3", n)
	}
}
