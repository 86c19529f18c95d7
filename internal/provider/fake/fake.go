// Package fake is a provider for tests of the controller: it records every
// call, answers with what the test set (the next errors, the status of a
// machine) and acts on nothing, so a test drives the machine's side itself
// (a rebooted node turns Ready, a replacement appears) at the moment it
// chooses. It lives beside the real providers, as Karpenter's
// cloudprovider/fake does, so that it keeps up with the interface.
package fake

import (
	"context"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/internal/provider"
)

// Methods of the provider, as recorded in Call.Method.
const (
	MethodReboot              = "Reboot"
	MethodReplace             = "Replace"
	MethodStatus              = "Status"
	MethodSetScaleInProtected = "SetScaleInProtection"
	MethodPreflight           = "Preflight"
)

// Call is one recorded call.
type Call struct {
	Method string
	Node   string
	// Token is the idempotency token of Reboot and Replace.
	Token string
	// Protected is the argument of SetScaleInProtection.
	Protected bool
	// Err is what the call returned.
	Err error
}

// Provider is a recording provider. The zero value is not usable; call New.
type Provider struct {
	name string

	mu       sync.Mutex
	calls    []Call
	errs     []error // returned by the next calls, first first
	statuses map[string]provider.InstanceStatus
	// preflight is what Preflight returns (nil: it passes); it is not
	// consumed, as a wrong role stays wrong until someone fixes it.
	preflight error
}

var (
	_ provider.Provider         = (*Provider)(nil)
	_ provider.ScaleInProtector = (*Provider)(nil)
)

// New returns a fake that calls itself name (a policy names providers, so
// a fake may stand in for any of them, "kwok" or "aws").
func New(name string) *Provider {
	return &Provider{name: name, statuses: map[string]provider.InstanceStatus{}}
}

// Name is the name given to New.
func (p *Provider) Name() string { return p.name }

// Reboot records the call and returns the next error, else
// "fake-reboot-"+token as the request id.
func (p *Provider) Reboot(_ context.Context, node *corev1.Node, token string) (string, error) {
	return p.act(MethodReboot, node, token)
}

// Replace records the call and returns the next error, else
// "fake-replace-"+token as the request id.
func (p *Provider) Replace(_ context.Context, node *corev1.Node, token string) (string, error) {
	return p.act(MethodReplace, node, token)
}

func (p *Provider) act(method string, node *corev1.Node, token string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.nextErrorLocked()
	p.calls = append(p.calls, Call{Method: method, Node: node.Name, Token: token, Err: err})
	if err != nil {
		return "", err
	}
	if method == MethodReboot {
		return "fake-reboot-" + token, nil
	}
	return "fake-replace-" + token, nil
}

// Status records the call and returns the next error, else what SetStatus
// set for the node (State Running when nothing was).
func (p *Provider) Status(_ context.Context, node *corev1.Node) (provider.InstanceStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.nextErrorLocked()
	p.calls = append(p.calls, Call{Method: MethodStatus, Node: node.Name, Err: err})
	if err != nil {
		return provider.InstanceStatus{}, err
	}
	if st, ok := p.statuses[node.Name]; ok {
		return st, nil
	}
	return provider.InstanceStatus{State: provider.StateRunning, ID: node.Name}, nil
}

// SetScaleInProtection records the call and returns the next error.
func (p *Provider) SetScaleInProtection(_ context.Context, node *corev1.Node, protected bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.nextErrorLocked()
	p.calls = append(p.calls, Call{Method: MethodSetScaleInProtected, Node: node.Name, Protected: protected, Err: err})
	return err
}

func (p *Provider) nextErrorLocked() error {
	if len(p.errs) == 0 {
		return nil
	}
	err := p.errs[0]
	p.errs = p.errs[1:]
	return err
}

// SetNextError makes the next call, of any method, fail with err.
func (p *Provider) SetNextError(err error) { p.SetNextErrors(err, 1) }

// SetNextErrors makes the next n calls fail with err (an outage of n calls),
// after any errors set before.
func (p *Provider) SetNextErrors(err error, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.errs = append(p.errs, err)
	}
}

// SetStatus is what Status reports for the node from now on.
func (p *Provider) SetStatus(node string, st provider.InstanceStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.statuses[node] = st
}

// Calls returns the calls so far, oldest first.
func (p *Provider) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// CallsTo returns the calls of one method, oldest first.
func (p *Provider) CallsTo(method string) []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Call
	for _, c := range p.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets the calls, the errors not yet returned and the statuses.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls, p.errs = nil, nil
	p.statuses = map[string]provider.InstanceStatus{}
}

// Preflight records the call (Node is the nodes' names, comma-separated)
// and returns what SetPreflight set; it does not consume the next errors.
func (p *Provider) Preflight(_ context.Context, nodes []*corev1.Node) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	p.calls = append(p.calls, Call{Method: MethodPreflight, Node: strings.Join(names, ","), Err: p.preflight})
	if p.preflight != nil {
		return "", p.preflight
	}
	return "fake provider " + p.name + " is ready", nil
}

// SetPreflight makes every Preflight from now on return err (nil: pass).
func (p *Provider) SetPreflight(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.preflight = err
}
