package remediation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/provider"
)

// DefaultPreflightEvery is how often each policy's provider proves again
// that it can act (jittered by up to a fifth, so that many controllers, or
// many policies, do not ask the cloud in step).
const DefaultPreflightEvery = 5 * time.Minute

// preflightTimeout bounds one provider's preflight: the aws provider's
// retries ride out throttling within it, and a hung cloud must not hold the
// checks of every other policy.
const preflightTimeout = time.Minute

// maxPreflightMessage keeps the condition readable; the full text is logged.
const maxPreflightMessage = 2048

// preflightResult is one policy's last preflight.
type preflightResult struct {
	ready           bool
	reason, message string
	generation      int64
	next            time.Time // when it is due again
}

// preflightResults is shared by the preflight loop, which writes it, and
// the policy status loop, the one writer of the policy's conditions (two
// writers of a merge-patched condition list would drop each other's).
type preflightResults struct {
	mu       sync.Mutex
	byPolicy map[string]preflightResult
}

func (r *preflightResults) get(policy string) (preflightResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.byPolicy[policy]
	return v, ok
}

// keep forgets the results of policies not named.
func (r *preflightResults) keep(policies map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.byPolicy {
		if !policies[name] {
			delete(r.byPolicy, name)
		}
	}
}

func (r *preflightResults) put(policy string, v preflightResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPolicy == nil {
		r.byPolicy = map[string]preflightResult{}
	}
	r.byPolicy[policy] = v
}

// preflightLoop runs each policy's provider preflight at start, when the
// policy is new or changed, and every `every` after.
type preflightLoop struct {
	client    client.Reader
	providers provider.Set
	clock     clock.Clock
	every     time.Duration // between two preflights of a policy
	tick      time.Duration // how often it looks for policies that are due
	results   *preflightResults
}

// NeedLeaderElection: the results feed the status only the leader writes.
func (l *preflightLoop) NeedLeaderElection() bool { return true }

func (l *preflightLoop) Start(ctx context.Context) error {
	for {
		l.runDue(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-l.clock.After(l.tick):
		}
	}
}

func (l *preflightLoop) runDue(ctx context.Context) {
	var list v1alpha1.RemediationPolicyList
	if err := l.client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing policies for the provider preflight")
		return
	}
	now := l.clock.Now()
	var nodes *corev1.NodeList
	names := map[string]bool{}
	for i := range list.Items {
		names[list.Items[i].Name] = true
	}
	l.results.keep(names)
	for i := range list.Items {
		obj := &list.Items[i]
		if last, ok := l.results.get(obj.Name); ok && last.generation == obj.Generation && now.Before(last.next) {
			continue
		}
		if nodes == nil {
			nodes = &corev1.NodeList{}
			if err := l.client.List(ctx, nodes); err != nil {
				log.FromContext(ctx).Error(err, "listing nodes for the provider preflight")
				return
			}
		}
		p, err := newPolicy(obj)
		if err != nil {
			continue // the status loop reports it
		}
		res := l.check(ctx, p, nodes.Items)
		res.generation, res.next = obj.Generation, l.clock.Now().Add(wait.Jitter(l.every, 0.2))
		l.results.put(obj.Name, res)
	}
}

// check runs the preflight of every provider the policy's nodes use.
func (l *preflightLoop) check(ctx context.Context, p *policy, all []corev1.Node) preflightResult {
	byProvider := map[string][]*corev1.Node{}
	for i := range all {
		if n := &all[i]; p.matches(n) {
			name := l.providers.Resolve(p.Spec.Provider, n)
			byProvider[name] = append(byProvider[name], n)
		}
	}
	if len(byProvider) == 0 {
		if p.Spec.Provider == "" {
			return preflightResult{ready: true, reason: v1alpha1.ReasonPreflightPassed,
				message: "no node matches the policy yet, and its provider is guessed per node: nothing to prove"}
		}
		byProvider[p.Spec.Provider] = nil
	}
	names := make([]string, 0, len(byProvider))
	for name := range byProvider {
		names = append(names, name)
	}
	slices.Sort(names)
	res := preflightResult{ready: true, reason: v1alpha1.ReasonPreflightPassed}
	var passed, failed []string
	logger := log.FromContext(ctx).WithValues("policy", p.Name)
	for _, name := range names {
		nodes := byProvider[name]
		var node *corev1.Node
		if len(nodes) > 0 {
			node = nodes[0]
		}
		prov, err := l.providers.For(name, node)
		if err != nil {
			res.ready, res.reason = false, v1alpha1.ReasonProviderNotConfigured
			failed = append(failed, fmt.Sprintf("%d nodes need %v", len(nodes), err))
			continue
		}
		cctx, cancel := context.WithTimeout(log.IntoContext(ctx, logger), preflightTimeout)
		msg, err := prov.Preflight(cctx, nodes)
		cancel()
		if err != nil {
			if res.ready {
				res.reason = provider.ReasonOf(err)
			}
			res.ready = false
			failed = append(failed, err.Error())
			logger.Info("Provider preflight failed", "provider", name, "nodes", len(nodes), "reason", provider.ReasonOf(err), "error", err.Error())
			continue
		}
		passed = append(passed, fmt.Sprintf("%s (%d nodes): %s", name, len(nodes), msg))
		logger.V(1).Info("Provider preflight passed", "provider", name, "nodes", len(nodes), "detail", msg)
	}
	if res.ready {
		res.message = strings.Join(passed, "; ")
	} else {
		res.message = strings.Join(failed, "; ")
	}
	res.message = truncate(res.message, maxPreflightMessage)
	return res
}

// providerReadyCondition is the condition a result shows.
func (r preflightResult) condition() metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionProviderReady, Status: metav1.ConditionTrue, Reason: r.reason, Message: r.message, ObservedGeneration: r.generation}
	if !r.ready {
		c.Status = metav1.ConditionFalse
	}
	return c
}
