package kwok

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The chaos file switches failures on and off between calls, as the soak
// test does to a running controller.
func TestChaosFileFailsCalls(t *testing.T) {
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "chaos-0", Labels: map[string]string{}, Annotations: map[string]string{}}}
	// The file is read before any API call, so the fake client will do.
	c := fakeclient.NewClientBuilder().WithObjects(node).Build()
	chaos := filepath.Join(t.TempDir(), "chaos")
	p := New(c, Options{ChaosFile: chaos})
	for mode, want := range map[string]string{ChaosFail: "cloud API is down", ChaosThrottle: "Throttling"} {
		if err := os.WriteFile(chaos, []byte(mode+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Reboot(ctx, node, "t1"); !errors.Is(err, ErrChaos) || !strings.Contains(err.Error(), want) {
			t.Errorf("mode %s: Reboot error %v; want ErrChaos saying %q", mode, err, want)
		}
		if _, err := p.Replace(ctx, node, "t1"); !errors.Is(err, ErrChaos) {
			t.Errorf("mode %s: Replace error %v; want ErrChaos", mode, err)
		}
	}
	if err := os.WriteFile(chaos, []byte("meteor"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Status(ctx, node); err == nil || !strings.Contains(err.Error(), `unknown mode "meteor"`) {
		t.Errorf("a bad mode gave %v", err)
	}
	if err := os.Remove(chaos); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reboot(ctx, node, "t1"); err != nil {
		t.Errorf("without a chaos file Reboot failed: %v", err)
	}
}
