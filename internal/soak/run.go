package soak

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/score/tieraffinity"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

const (
	nodePrefix = "gpu-node"
	namespace  = "training"
	policyName = "soak"
)

var jobs = []string{"llm-pretrain", "llm-finetune"}

// Run runs one soak and returns its report; the error is about running it,
// not about the invariants (Report.Failed says those).
func Run(ctx context.Context, o Options) (_ *Report, err error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.OwnBinDir == "" {
		o.OwnBinDir = o.BinDir
	}
	workDir := o.WorkDir
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "gpuheal-soak-"); err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(workDir) }()
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	p := o.pace()
	log := o.Log

	slots := make([]string, o.Nodes)
	for i := range slots {
		slots[i] = testenv.NodeName(nodePrefix, i)
	}
	faults := plantLatent(drawSchedule(o, slots, p.faultsPerMinute), o.LatentShare, o.Seed)
	schedulePath := filepath.Join(workDir, "schedule.jsonl")
	if err := schedule.WriteSchedule(schedulePath, faults); err != nil {
		return nil, err
	}
	if err := writeBoards(filepath.Join(workDir, boardsFile), o, slots, p.faultsPerMinute, faults); err != nil {
		return nil, err
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gpuhealv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	apiAudit := filepath.Join(workDir, "apiserver-audit.jsonl")
	log.Info("soak: starting the control plane", "mode", o.Mode, "nodes", o.Nodes, "duration", o.Duration, "speed", o.Speed)
	env, err := testenv.Start(ctx, testenv.Options{BinDir: o.BinDir, Kwok: true, Workloads: true, Scheme: scheme,
		WorkDir: filepath.Join(workDir, "cluster"), APIAuditLog: apiAudit})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, env.Stop()) }()
	if err := setupFleet(ctx, env.Client, o); err != nil {
		return nil, err
	}

	r := &run{opts: o, pace: p, env: env, c: env.Client, workDir: workDir, log: log, schedule: schedulePath, apiAudit: apiAudit,
		epoch: time.Now().Add(2 * time.Second)}
	if err := r.startProcesses(ctx); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r.stopProcesses()) }()

	s := newSampler(r)
	samplerCtx, stopSampler := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() { defer close(samplerDone); s.run(samplerCtx) }()

	faultsCtx, endFaults := context.WithTimeout(ctx, o.Duration)
	defer endFaults()
	var chaos *chaosMonkey
	if o.Chaos {
		chaos = newChaos(r)
		chaos.start(faultsCtx)
	}
	if o.Mode == Manual {
		op := newOperator(r)
		go op.run(samplerCtx)
	}
	log.Info("soak: fleet life under way", "faultsScheduled", len(faults), "until", time.Now().Add(o.Duration).Format(time.TimeOnly))
	<-faultsCtx.Done()
	if ctx.Err() != nil {
		stopSampler()
		<-samplerDone
		return nil, ctx.Err()
	}
	if chaos != nil {
		chaos.wait()
		if err := r.healAll(ctx); err != nil {
			log.Error("soak: undoing chaos", "err", err)
		}
	}
	settled := r.quiesce(ctx)
	stopSampler()
	<-samplerDone
	return r.report(ctx, s, chaos, settled, len(faults))
}

// setupFleet creates the nodes, two training jobs that fill three quarters
// of the fleet (one 8-GPU pod per node, one pod of each at a time may be
// disrupted), and in live mode the policy.
func setupFleet(ctx context.Context, c client.Client, o Options) error {
	if err := testenv.TrainingFleet(ctx, c, nodePrefix, o.Nodes, namespace, trainingAffinity(o.Mode == Live && !o.NoFeedback), jobs...); err != nil {
		return err
	}
	if o.Inference {
		if err := inferenceService(ctx, c, o.Nodes); err != nil {
			return err
		}
	}
	if o.Mode != Live {
		return nil
	}
	p := o.pace()
	parallel := intstr.FromInt(o.maxParallel())
	twenty := intstr.FromString("20%")
	timeout := metav1.Duration{Duration: 10 * time.Minute}
	var actions []gpuhealv1.ActionRule
	if o.RebootNotReset {
		actions = []gpuhealv1.ActionRule{{RecommendedAction: string(finding.ActionResetGPU), Action: gpuhealv1.ActionReboot}}
	}
	var lemon gpuhealv1.LemonSpec // the CRD's defaults: on
	if o.NoFeedback {
		lemon.Incidents = ptr.To[int32](0)
	}
	var gate *gpuhealv1.ValidationSpec
	if o.Gate {
		gate = testenv.HealthGate()
	}
	return c.Create(ctx, &gpuhealv1.RemediationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: gpuhealv1.RemediationPolicySpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{gpuhealv1.LabelNvidiaGPUPresent: "true"}},
			UnhealthyConditions: []gpuhealv1.UnhealthyCondition{
				{Type: gpuhealv1.ConditionGPUHealAcceleratorHealthy, Status: metav1.ConditionFalse, For: metav1.Duration{Duration: p.holdFor}},
				{Type: gpuhealv1.ConditionGPUHealKernelHealthy, Status: metav1.ConditionFalse, For: metav1.Duration{Duration: p.holdFor}},
				{Type: gpuhealv1.ConditionGPUHealNetworkingHealthy, Status: metav1.ConditionFalse, For: metav1.Duration{Duration: p.holdFor}},
			},
			MaxUnhealthy: &twenty,
			MaxParallel:  &parallel,
			Drain:        gpuhealv1.DrainSpec{Timeout: &timeout, OnTimeout: gpuhealv1.DrainWait},
			Provider:     "kwok",
			RecoveryHold: &metav1.Duration{Duration: p.recoveryHold},
			Validation:   gate,
			Actions:      actions,
			Lemon:        lemon,
		},
	})
}

// trainingAffinity is the training jobs' node affinity: with steer, the
// "prefer healthier nodes" one of docs/health-score.md, so that the health
// tier steers where a moved pod goes; without, none (a run that leaves the
// score out of scheduling).
func trainingAffinity(steer bool) *corev1.Affinity {
	if !steer {
		return nil
	}
	return tieraffinity.PreferHealthier()
}

// inferenceService runs inferencePodsPerNode one-GPU pods on every other
// node the training jobs left free, one Deployment per node (pinned, so
// that each node's GPUs serve several pods); the rest stay free for the
// training pods a drain moves.
func inferenceService(ctx context.Context, c client.Client, nodes int) error {
	free, err := testenv.NodesWithoutPods(ctx, c, nodePrefix, nodes, namespace)
	if err != nil {
		return err
	}
	var names []string
	for i, node := range free {
		if i%2 == 1 {
			continue
		}
		name := "inference-" + strings.TrimPrefix(node, nodePrefix+"-")
		if err := testenv.CreateGPUWorkloadOn(ctx, c, namespace, name, inferencePodsPerNode, 1, node); err != nil {
			return err
		}
		names = append(names, name)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for _, name := range names {
		if err := testenv.WaitWorkloadRunning(waitCtx, c, namespace, name, inferencePodsPerNode); err != nil {
			return err
		}
	}
	return nil
}

// quiesce waits, after the last fault, until every fault has an incident
// that ended and none is open, or the bound passes; it reports which.
func (r *run) quiesce(ctx context.Context) bool {
	r.log.Info("soak: faults stopped; waiting for open incidents to end", "atMost", r.pace.quiesce)
	deadline := time.Now().Add(r.pace.quiesce)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if r.settled(ctx) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return false
}

// settled: no incident open and no node with a GPU or kernel condition
// False (an unrepaired fault), in live mode; in manual mode the operator
// has replaced every broken node.
func (r *run) settled(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	if err := r.c.List(ctx, &nodes); err != nil {
		return false
	}
	for i := range nodes.Items {
		if brokenNode(&nodes.Items[i]) || !testenv.NodeReady(&nodes.Items[i]) {
			return false
		}
	}
	if r.opts.Mode != Live {
		return true
	}
	var rems gpuhealv1.NodeRemediationList
	if err := r.c.List(ctx, &rems); err != nil {
		return false
	}
	for _, rem := range rems.Items {
		if !rem.Status.Phase.Terminal() {
			return false
		}
	}
	return true
}

func brokenNode(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if gpuhealv1.IsAgentHealthCondition(string(c.Type)) && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}
