package simfleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
)

// The fleet answers the health gate's check Jobs on its nodes (the wire
// contract in docs/health-gate.md, "Simulation"): for each check Job it
// plays the Job controller (it makes the pod, then the Job's status) and
// the kubelet of that pod (it ends the container with the simulated
// tool's output as its termination message), after the check's simulated
// run time. kwok, where it manages the node, still starts the pod (IP,
// Running); the pod's annotations put kwok's own completion of Job pods
// off by a year, so only the fleet ends it.

// kwokNeverDelay keeps kwok's pod-complete stage from ending a check pod:
// its delay and jitter, read from these annotations, are both this long.
const kwokNeverDelay = "8760h"

var kwokCompleteAnnotations = map[string]string{
	"pod-complete.stage.kwok.x-k8s.io/delay":        kwokNeverDelay,
	"pod-complete.stage.kwok.x-k8s.io/jitter-delay": kwokNeverDelay,
}

// checkContainer is the contract's name of the container that runs the tool.
const checkContainer = "check"

// runCheckAnswerer answers check Jobs every CheckPoll until ctx ends.
func (f *simFleet) runCheckAnswerer(ctx context.Context) {
	tick := time.NewTicker(f.opts.CheckPoll)
	defer tick.Stop()
	for {
		if err := f.answerChecks(ctx, time.Now()); err != nil && ctx.Err() == nil {
			f.log.Warn("sim fleet: answering check Jobs", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// answerChecks moves every unfinished check Job the fleet answers one step.
func (f *simFleet) answerChecks(ctx context.Context, now time.Time) error {
	jobs, err := listCheckJobs(ctx, f.kube, f.opts.CheckNamespace, v1alpha1.LabelCheck)
	if err != nil {
		return err
	}
	for i := range jobs {
		j := &jobs[i]
		if j.finished() || !f.answers(j) {
			continue
		}
		if err := f.answerCheck(ctx, j, now); err != nil {
			f.log.Warn("sim fleet: answering a check Job", "job", j.Namespace+"/"+j.Name, "err", err)
		}
	}
	return nil
}

// answers: the Job is managed by whom the fleet stands in for.
func (f *simFleet) answers(j *checkJob) bool {
	if f.opts.CheckJobsManagedBy == "" {
		return true
	}
	return j.Spec.ManagedBy != nil && *j.Spec.ManagedBy == f.opts.CheckJobsManagedBy
}

func (f *simFleet) answerCheck(ctx context.Context, j *checkJob, now time.Time) error {
	pod, err := getPod(ctx, f.kube, j.Namespace, checkPodName(j))
	if err != nil {
		return err
	}
	switch {
	case pod == nil && j.Status.StartTime == nil:
		return f.startCheck(ctx, j, now)
	case pod == nil:
		// The pod went away under a running check (preempted, evicted):
		// with backoffLimit 0 the Job has failed.
		return f.finishJob(ctx, j, now, now, false, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	case pod.finished():
		// A previous fleet ended the pod but not the Job.
		return f.finishJob(ctx, j, podStart(pod), now, pod.Status.Phase == "Succeeded", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	}
	start := podStart(pod)
	if j.Status.StartTime != nil {
		start = j.Status.StartTime.Time
	}
	if d := j.Spec.ActiveDeadlineSeconds; d != nil && !now.Before(start.Add(time.Duration(*d)*time.Second)) {
		// As the Job controller does: the active pod is killed.
		if err := deletePod(ctx, f.kube, pod); err != nil {
			return err
		}
		return f.finishJob(ctx, j, start, now, false, "DeadlineExceeded", "Job was active longer than specified deadline")
	}
	kind := v1alpha1.CheckKind(j.Labels[v1alpha1.LabelCheckKind])
	if now.Before(start.Add(f.checkDuration(kind))) {
		return nil
	}
	a := f.agentOf(j.node())
	if a == nil {
		// The machine is down (rebooting, gone): the check waits for it,
		// up to its deadline.
		return nil
	}
	run := runTool(a.node, kind, pod)
	if err := patchPodStatus(ctx, f.kube, pod, terminatedPodStatus(pod, start, now, run)); err != nil {
		return err
	}
	f.log.Info("sim fleet: check ran", "job", j.Namespace+"/"+j.Name, "node", a.name, "kind", kind, "exitCode", run.ExitCode)
	return f.finishJob(ctx, j, start, now, run.ExitCode == 0, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
}

func (f *simFleet) agentOf(node string) *simAgent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.agents[node]
}

// checkDuration is the simulated run time of a kind at the fleet's pace.
func (f *simFleet) checkDuration(kind v1alpha1.CheckKind) time.Duration {
	d, ok := f.opts.CheckDurations[kind]
	if !ok {
		d = DefaultCheckDurations[kind]
	}
	speed := f.opts.CheckSpeed
	if speed <= 0 {
		speed = 1
	}
	return time.Duration(float64(d) / speed)
}

// checkPodName is the Job's pod: its name and a hash of its UID, so that
// a restarted fleet finds the pod it made and a new Job of the same name
// gets a new one.
func checkPodName(j *checkJob) string {
	sum := sha256.Sum256([]byte(j.UID))
	name := j.Name
	if len(name) > 57 {
		name = name[:57]
	}
	return name + "-" + hex.EncodeToString(sum[:])[:5]
}

func podStart(p *simPod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// startCheck makes the Job's pod, bound to the node (the contract's node
// affinity names it; no scheduler need run), and marks the Job started.
func (f *simFleet) startCheck(ctx context.Context, j *checkJob, now time.Time) error {
	var spec map[string]any
	if err := json.Unmarshal(j.Spec.Template.Spec, &spec); err != nil || spec == nil {
		return fmt.Errorf("job %s/%s: its pod template has no spec", j.Namespace, j.Name)
	}
	node := j.node()
	if node == "" {
		return fmt.Errorf("job %s/%s: neither the %s annotation nor the %s label names its node", j.Namespace, j.Name,
			v1alpha1.AnnotationCheckNodeName, v1alpha1.LabelCheckNode)
	}
	spec["nodeName"] = node
	labels := maps.Clone(j.Spec.Template.Metadata.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	// The labels the Job controller puts on its pods.
	labels["batch.kubernetes.io/job-name"], labels["job-name"] = j.Name, j.Name
	labels["batch.kubernetes.io/controller-uid"], labels["controller-uid"] = string(j.UID), string(j.UID)
	annotations := maps.Clone(j.Spec.Template.Metadata.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, kwokCompleteAnnotations)
	yes := true
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name": checkPodName(j), "namespace": j.Namespace, "labels": labels, "annotations": annotations,
			"ownerReferences": []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: &yes}},
		},
		"spec": spec,
	}
	if err := createPod(ctx, f.kube, j.Namespace, pod); err != nil {
		return err
	}
	var ready int32
	return patchJobStatus(ctx, f.kube, j, map[string]any{
		"startTime": metav1.NewTime(now), "active": 1, "ready": &ready, "terminating": &ready,
	})
}

// finishJob writes the Job's end as the Job controller does, with the
// conditions API validation asks of a Job another controller manages.
func (f *simFleet) finishJob(ctx context.Context, j *checkJob, start, now time.Time, succeeded bool, reason, message string) error {
	var zero int32
	t := metav1.NewTime(now)
	status := map[string]any{
		"active": 0, "ready": &zero, "terminating": &zero, "uncountedTerminatedPods": map[string]any{},
	}
	if j.Status.StartTime == nil {
		status["startTime"] = metav1.NewTime(start)
	}
	cond := func(typ, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": reason, "message": message, "lastProbeTime": t, "lastTransitionTime": t}
	}
	if succeeded {
		status["succeeded"] = 1
		status["completionTime"] = t
		status["conditions"] = []map[string]any{
			cond("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
			cond("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
		}
	} else {
		status["failed"] = 1
		status["conditions"] = []map[string]any{cond("FailureTarget", reason, message), cond("Failed", reason, message)}
	}
	return patchJobStatus(ctx, f.kube, j, status)
}

// runTool runs the check's tool on the node's simulated GPUs.
func runTool(n *sim.Node, kind v1alpha1.CheckKind, pod *simPod) sim.CheckRun {
	switch kind {
	case v1alpha1.CheckDCGM:
		return n.DCGMDiag(dcgmLevel(pod))
	case v1alpha1.CheckNCCL:
		return n.NCCLAllReduce()
	case v1alpha1.CheckNVBandwidth:
		return n.NVBandwidth()
	}
	return sim.CheckRun{Output: []byte(fmt.Sprintf("sim fleet: no simulated tool for check kind %q\n", kind)), ExitCode: 127}
}

// dcgmLevel is the -r (--run) level of the check container's dcgmi
// command; 4, every test, when the command names none.
func dcgmLevel(pod *simPod) int {
	for _, c := range pod.Spec.Containers {
		if c.Name != checkContainer {
			continue
		}
		argv := append(append([]string{}, c.Command...), c.Args...)
		var words []string
		for _, a := range argv {
			words = append(words, strings.Fields(a)...) // a shell command line in one argument
		}
		for i, w := range words {
			v, ok := "", false
			switch {
			case (w == "-r" || w == "--run") && i+1 < len(words):
				v, ok = words[i+1], true
			case strings.HasPrefix(w, "--run="):
				v, ok = strings.TrimPrefix(w, "--run="), true
			case strings.HasPrefix(w, "-r") && len(w) > 2:
				v, ok = w[2:], true
			}
			if n, err := strconv.Atoi(v); ok && err == nil && n >= 1 && n <= 4 {
				return n
			}
		}
	}
	return 4
}

// terminatedPodStatus is the status a kubelet writes when the pod's
// containers have exited: the check container with the tool's output as
// its termination message (cut to what the API keeps).
func terminatedPodStatus(p *simPod, start, now time.Time, run sim.CheckRun) map[string]any {
	phase, reason := "Succeeded", "Completed"
	if run.ExitCode != 0 {
		phase, reason = "Failed", "Error"
	}
	t, st := metav1.NewTime(now), metav1.NewTime(start)
	msg := run.Output
	if len(msg) > sim.MaxCheckOutput {
		msg = msg[len(msg)-sim.MaxCheckOutput:]
	}
	var statuses []map[string]any
	for _, c := range p.Spec.Containers {
		term := map[string]any{"exitCode": 0, "reason": "Completed", "startedAt": st, "finishedAt": t}
		if c.Name == checkContainer || len(p.Spec.Containers) == 1 {
			term["exitCode"], term["reason"], term["message"] = run.ExitCode, reason, string(msg)
		}
		statuses = append(statuses, map[string]any{
			"name": c.Name, "image": c.Image, "imageID": "", "ready": false, "restartCount": 0, "started": false,
			"state": map[string]any{"terminated": term},
		})
	}
	cond := func(typ, status, reason string) map[string]any {
		c := map[string]any{"type": typ, "status": status, "lastProbeTime": nil, "lastTransitionTime": t}
		if reason != "" {
			c["reason"] = reason
		}
		return c
	}
	status := map[string]any{
		"phase": phase, "containerStatuses": statuses,
		"conditions": []map[string]any{
			cond("PodReadyToStartContainers", "False", ""), cond("Initialized", "True", "PodCompleted"),
			cond("Ready", "False", "PodCompleted"), cond("ContainersReady", "False", "PodCompleted"),
			cond("PodScheduled", "True", ""),
		},
	}
	if p.Status.StartTime == nil {
		status["startTime"] = st
	}
	if p.Status.PodIP == "" {
		// No kubelet (kwok) started the pod: it gets an address as if one
		// had, so that nothing reads it as never started.
		sum := sha256.Sum256([]byte(p.UID))
		ip := fmt.Sprintf("10.255.%d.%d", sum[0], 1+sum[1]%254)
		status["podIP"], status["podIPs"] = ip, []map[string]string{{"ip": ip}}
	}
	return status
}
