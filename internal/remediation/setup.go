package remediation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/provider"
	"github.com/gpuheal/gpuheal/internal/score"
)

// DefaultPoll is how often waiting steps look again.
const DefaultPoll = 2 * time.Second

// ControllerOptions configures the reconcilers.
type ControllerOptions struct {
	// Providers the policies may name.
	Providers provider.Set
	// Clock; nil means the real one.
	Clock clock.Clock
	// Poll is how soon waiting steps look again (default 2s).
	Poll time.Duration
	// Workers per controller (default 32).
	Workers int
	// Name for events and logs.
	Name string
	// Audit receives a record of every step (nil: none). Give it a
	// buffered sink (audit.NewBuffered): remediation never waits on it.
	Audit audit.Sink
	// AuditReader loads the incident history for health scores on start,
	// and lets a new leader rebuild records lost with the last one's
	// buffer (nil: neither).
	AuditReader audit.Reader
	// AuditBackfillWindow: a new leader rebuilds missing records of
	// incidents that changed within it (default 24h).
	AuditBackfillWindow time.Duration
	// Scorer computes health scores; nil publishes none.
	Scorer *score.Scorer
	// ScoreEvery is how often scores are published (default 1m).
	ScoreEvery time.Duration
	// ProtectGold keeps gold nodes out of scale-in through providers that
	// can (aws: Auto Scaling instance protection; kwok simulates it).
	ProtectGold bool
	// TaintBronze keeps a PreferNoSchedule taint gpuheal.io/health-tier=bronze
	// on bronze nodes, so that the scheduler places new pods on healthier
	// ones when it can (docs/health-score.md). Off, the taint is removed
	// where an earlier run left it.
	TaintBronze bool
	// Self is the controller's own pod, when it runs in one (the downward
	// API gives its name). A drain leaves it, and gpuheal's other pods in
	// its namespace, in place: a controller that evicted itself from the
	// node it repairs would stall the incident until a replica elsewhere
	// took over, or for good where its replacement can only be scheduled on
	// that node; the uninstall Job must outlive the controller it stops.
	Self types.NamespacedName
	// IncidentRetention: a finished NodeRemediation is deleted this long
	// after it ended (default DefaultIncidentRetention, 30 days); its audit
	// records stay. Kept longer while its policy's escalation or
	// correlated-fault window still counts it.
	IncidentRetention time.Duration
	// PreflightEvery is how often each policy's provider proves that it
	// can act (default DefaultPreflightEvery, jittered).
	PreflightEvery time.Duration
	// DevicePlugins select NVIDIA's device plugin pods, which the
	// controller restarts after a GPU reset so that they advertise the
	// GPU again (none: never restarted).
	DevicePlugins []labels.Selector
	// Checks configures the health gate's Job checks: their namespace,
	// default images and managedBy.
	Checks CheckOptions
	// CheckpointPoster delivers the optional HTTP form of a checkpoint
	// request (drain mode CheckpointThenEvict) to the URL a pod declares;
	// nil: the real one (checkpointhttp.go). It must never block.
	CheckpointPoster CheckpointPoster
	// SkipNameValidation lets one process run several controllers with the
	// same names (tests that restart or replicate the controller).
	SkipNameValidation bool
}

func (o ControllerOptions) controllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: o.Workers, SkipNameValidation: &o.SkipNameValidation}
}

func (o ControllerOptions) withDefaults() ControllerOptions {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Workers <= 0 {
		o.Workers = 32
	}
	if o.IncidentRetention <= 0 {
		o.IncidentRetention = DefaultIncidentRetention
	}
	if o.Name == "" {
		o.Name = "gpuheal-controller"
	}
	if o.PreflightEvery <= 0 {
		o.PreflightEvery = DefaultPreflightEvery
	}
	o.Checks = o.Checks.withDefaults()
	if o.CheckpointPoster == nil {
		o.CheckpointPoster = NewHTTPCheckpointPoster()
	}
	return o
}

// Setup registers the incident opener, the remediation state machine and
// the policy status loop with the manager.
func Setup(mgr manager.Manager, o ControllerOptions) error {
	o = o.withDefaults()
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.NodeRemediation{}, nodeNameField, func(o client.Object) []string {
		return []string{o.(*v1alpha1.NodeRemediation).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing remediations by node: %w", err)
	}
	recorder := mgr.GetEventRecorder(o.Name)
	c := mgr.GetClient()
	aud := auditor{sink: o.Audit, clock: o.Clock}
	if o.Scorer != nil {
		if o.ScoreEvery <= 0 {
			o.ScoreEvery = time.Minute
		}
		cfg := rest.CopyConfig(mgr.GetConfig())
		cfg.QPS, cfg.Burst = 10, 20 // a 5,000-node fleet's first scores take ~8 minutes
		writer, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			return fmt.Errorf("creating the health score client: %w", err)
		}
		pub := &scorePublisher{client: c, writer: writer, store: o.AuditReader, scorer: o.Scorer, every: o.ScoreEvery, clock: o.Clock, events: map[string][]score.Event{},
			taintBronze: o.TaintBronze}
		if o.ProtectGold {
			pub.providers = o.Providers
		}
		aud.observe = pub.observe
		if err := mgr.Add(pub); err != nil {
			return err
		}
	}

	nodes := newNodeReconciler(c, recorder, o.Clock, aud)
	err := ctrl.NewControllerManagedBy(mgr).
		Named("node").
		For(&corev1.Node{}, builder.WithPredicates(nodeHealthChanged())).
		// Only a policy's spec changes which nodes it opens incidents for.
		// Its status changes every few seconds while incidents run, and each
		// change queued every node of the fleet: 5,000 reconciles at a time
		// in the fleet benchmark, ahead of the node whose time had come.
		Watches(&v1alpha1.RemediationPolicy{}, handler.EnqueueRequestsFromMapFunc(allNodes(c)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.NodeRemediation{}, handler.EnqueueRequestsFromMapFunc(nodeOfIncident)).
		WithOptions(o.controllerOptions()).
		Complete(nodes)
	if err != nil {
		return fmt.Errorf("setting up node controller: %w", err)
	}

	if o.Checks.Logs == nil {
		cs, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return fmt.Errorf("creating the client for check pods' logs: %w", err)
		}
		o.Checks.Logs = clientsetLogs{cs}
	}
	rems := newRemediationReconciler(c, mgr.GetAPIReader(), recorder, o, aud)
	err = ctrl.NewControllerManagedBy(mgr).
		Named("noderemediation").
		For(&v1alpha1.NodeRemediation{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(incidentsOfNode(c)), builder.WithPredicates(nodeHealthChanged())).
		WithOptions(o.controllerOptions()).
		Complete(rems)
	if err != nil {
		return fmt.Errorf("setting up remediation controller: %w", err)
	}
	// Join and idle checks: the gate outside incidents, on the incident
	// reconciler's check machinery.
	err = ctrl.NewControllerManagedBy(mgr).
		Named("nodegate").
		For(&corev1.Node{}, builder.WithPredicates(nodeHealthChanged())).
		Watches(&v1alpha1.RemediationPolicy{}, handler.EnqueueRequestsFromMapFunc(allNodes(c)),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// An incident opening abandons the node's run; one ending may let it start.
		Watches(&v1alpha1.NodeRemediation{}, handler.EnqueueRequestsFromMapFunc(nodeOfAnyIncident)).
		WithOptions(o.controllerOptions()).
		Complete(newGateReconciler(rems))
	if err != nil {
		return fmt.Errorf("setting up join and idle check controller: %w", err)
	}
	if o.Audit != nil && o.AuditReader != nil {
		if o.AuditBackfillWindow <= 0 {
			o.AuditBackfillWindow = 24 * time.Hour
		}
		err := mgr.Add(&auditBackfill{client: mgr.GetAPIReader(), reader: o.AuditReader, sink: o.Audit,
			window: o.AuditBackfillWindow, clock: o.Clock.Now, retry: 30 * time.Second})
		if err != nil {
			return err
		}
	}
	pre := &preflightResults{}
	err = mgr.Add(&preflightLoop{client: c, providers: o.Providers, clock: o.Clock, every: o.PreflightEvery,
		tick: min(o.PreflightEvery, 5*o.Poll), results: pre})
	if err != nil {
		return err
	}
	return mgr.Add(&policyStatusLoop{client: c, recorder: cleanEvents{recorder}, fleet: rems.fleet, slots: &rems.slots, every: 5 * o.Poll, preflight: pre})
}

// nodeHealthChanged passes node updates that matter here (conditions,
// labels, annotations, cordon, taints) and drops kubelet heartbeats, which
// on a large fleet are most updates.
func nodeHealthChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Node)
			n, ok2 := e.ObjectNew.(*corev1.Node)
			if !ok1 || !ok2 {
				return true
			}
			return !equalExceptScore(o.Labels, n.Labels) ||
				!equalExceptScore(o.Annotations, n.Annotations) ||
				o.Spec.Unschedulable != n.Spec.Unschedulable ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				conditionsChanged(o.Status.Conditions, n.Status.Conditions)
		},
	}
}

// scoreKeys are written by our own score publisher; a change to them says
// nothing about a node's health and would only echo back as a reconcile.
var scoreKeys = map[string]bool{v1alpha1.AnnotationHealthScore: true, v1alpha1.LabelHealthTier: true, v1alpha1.AnnotationGPUHealthScores: true, v1alpha1.AnnotationScaleInProtected: true}

func equalExceptScore(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; (!ok || w != v) && !scoreKeys[k] {
			return false
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !scoreKeys[k] {
			return false
		}
	}
	return true
}

func conditionsChanged(a, b []corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return true
	}
	seen := make(map[corev1.NodeConditionType]corev1.NodeCondition, len(a))
	for _, c := range a {
		seen[c.Type] = c
	}
	for _, c := range b {
		o, ok := seen[c.Type]
		if !ok || o.Status != c.Status || o.Reason != c.Reason || !o.LastTransitionTime.Equal(&c.LastTransitionTime) {
			return true
		}
	}
	return false
}

func allNodes(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list corev1.NodeList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}}
		}
		return out
	}
}

func nodeOfIncident(_ context.Context, o client.Object) []reconcile.Request {
	nr, ok := o.(*v1alpha1.NodeRemediation)
	if !ok || !nr.Status.Phase.Terminal() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nr.Spec.NodeName}}}
}

func nodeOfAnyIncident(_ context.Context, o client.Object) []reconcile.Request {
	nr, ok := o.(*v1alpha1.NodeRemediation)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nr.Spec.NodeName}}}
}

func incidentsOfNode(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1alpha1.NodeRemediationList
		if err := c.List(ctx, &list, client.MatchingFields{nodeNameField: o.GetName()}); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, nr := range list.Items {
			if !nr.Status.Phase.Terminal() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nr.Name}})
			}
		}
		return out
	}
}
