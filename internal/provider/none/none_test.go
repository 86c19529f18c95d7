package none

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuheal/gpuheal/internal/provider"
)

func TestNoneSupportsNothing(t *testing.T) {
	p := New()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0003"}}
	ctx := context.Background()
	if p.Name() != provider.None {
		t.Errorf("Name() = %q, want %q", p.Name(), provider.None)
	}
	for action, call := range map[string]func() (string, error){
		"reboot":  func() (string, error) { return p.Reboot(ctx, node, "inc-1") },
		"replace": func() (string, error) { return p.Replace(ctx, node, "inc-1") },
	} {
		id, err := call()
		if !errors.Is(err, provider.ErrUnsupported) {
			t.Errorf("%s: err = %v, want ErrUnsupported", action, err)
		}
		if err != nil && !strings.Contains(err.Error(), "gpu-0003") {
			t.Errorf("%s: error %q does not name the node", action, err)
		}
		if id != "" {
			t.Errorf("%s: request id = %q, want none", action, id)
		}
	}
	st, err := p.Status(ctx, node)
	if err != nil || st.State != provider.StateUnknown {
		t.Errorf("Status = %+v, %v; want Unknown, nil", st, err)
	}
}
