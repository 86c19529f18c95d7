package remediation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// cleanEvents strips terminal control sequences from every Event note:
// notes quote condition messages and provider errors, text that agents,
// kubelets and clouds wrote, and kubectl shows them on terminals.
type cleanEvents struct{ events.EventRecorder }

func (c cleanEvents) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	c.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", termsafe.Clean(fmt.Sprintf(note, args...)))
}
