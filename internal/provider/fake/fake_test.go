package fake

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/internal/provider"
)

func TestFakeRecordsCallsAndInjectsErrors(t *testing.T) {
	ctx := context.Background()
	p := New(provider.Kwok)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-0"}}
	outage := errors.New("cloud API down")
	p.SetNextErrors(outage, 2)

	if _, err := p.Reboot(ctx, n, "t1"); !errors.Is(err, outage) {
		t.Fatalf("first Reboot err = %v, want the set error", err)
	}
	if _, err := p.Status(ctx, n); !errors.Is(err, outage) {
		t.Fatalf("Status err = %v, want the second set error", err)
	}
	if id, err := p.Replace(ctx, n, "t1"); err != nil || id != "fake-replace-t1" {
		t.Fatalf("Replace = %q, %v; want fake-replace-t1 once the errors are used up", id, err)
	}
	p.SetStatus("n-0", provider.InstanceStatus{State: provider.StateGone, Replacement: "n-1"})
	if st, err := p.Status(ctx, n); err != nil || st.Replacement != "n-1" {
		t.Fatalf("Status = %+v, %v; want the set status", st, err)
	}
	if err := p.SetScaleInProtection(ctx, n, true); err != nil {
		t.Fatal(err)
	}

	want := []Call{
		{Method: MethodReboot, Node: "n-0", Token: "t1", Err: outage},
		{Method: MethodStatus, Node: "n-0", Err: outage},
		{Method: MethodReplace, Node: "n-0", Token: "t1"},
		{Method: MethodStatus, Node: "n-0"},
		{Method: MethodSetScaleInProtected, Node: "n-0", Protected: true},
	}
	if diff := cmp.Diff(want, p.Calls(), cmpopts.EquateErrors()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got := p.CallsTo(MethodStatus); len(got) != 2 {
		t.Errorf("CallsTo(Status) = %v, want 2 calls", got)
	}

	p.SetNextError(outage)
	p.Reset()
	if len(p.Calls()) != 0 {
		t.Error("Reset kept the calls")
	}
	if _, err := p.Reboot(ctx, n, "t2"); err != nil {
		t.Errorf("Reboot after Reset = %v, want the set error forgotten", err)
	}
	if st, _ := p.Status(ctx, n); st.State != provider.StateRunning {
		t.Errorf("Status after Reset = %+v, want Running", st)
	}
}
