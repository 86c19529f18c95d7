package remediation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// Default images of the health gate's Job checks (--check-image-*). The
// nvbandwidth tool has no image NVIDIA publishes, so it has no default: a
// policy names one, or the operator sets --check-image-nvbandwidth.
const (
	DefaultCheckImageDCGM = "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04"
	DefaultCheckImageNCCL = "ghcr.io/coreweave/nccl-tests:12.8.1-devel-ubuntu22.04-nccl2.26.2-1-0708d2e"
)

// checkJobTTL: a check Job the controller could not delete (it crashed
// between reading the result and the delete) goes by itself after this.
const checkJobTTL = 3600

// labelJobName is the label the API server puts on a Job's pod template
// (and so on its pods). The controller sets it itself so that whoever
// plays the Job controller (the kubelet's side of a sim fleet, a test)
// gives the pods the label the controller finds them by.
const labelJobName = batchv1.JobNameLabel

// CheckOptions configures the health gate's Job checks.
type CheckOptions struct {
	// Namespace of the check Jobs (default: $POD_NAMESPACE, else "default").
	Namespace string
	// Images per kind: the default when a check names none. A kind
	// without one fails its checks as Error.
	Images map[v1alpha1.CheckKind]string
	// JobsManagedBy, when set, is the Jobs' spec.managedBy: another
	// controller (a simulated fleet) runs them instead of the built-in one.
	JobsManagedBy string
	// Logs reads a check pod's log (nil: only termination messages are
	// read). Setup gives it a typed clientset.
	Logs podLogReader
}

func (o CheckOptions) withDefaults() CheckOptions {
	if o.Namespace == "" {
		o.Namespace = os.Getenv("POD_NAMESPACE")
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Images == nil {
		o.Images = map[v1alpha1.CheckKind]string{v1alpha1.CheckDCGM: DefaultCheckImageDCGM, v1alpha1.CheckNCCL: DefaultCheckImageNCCL}
	}
	return o
}

// Validate reports options the controller cannot run checks with.
func (o CheckOptions) Validate() error {
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return fmt.Errorf("--check-namespace %q: not a namespace name: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
	for kind, img := range o.Images {
		if strings.ContainsAny(img, " \t\n") {
			return fmt.Errorf("--check-image-%s %q: an image reference has no spaces", strings.ToLower(string(kind)), img)
		}
	}
	if o.JobsManagedBy != "" {
		if len(o.JobsManagedBy) > 63 || !strings.Contains(o.JobsManagedBy, "/") {
			return fmt.Errorf("--check-jobs-managed-by %q: must be a domain-prefixed path of at most 63 characters, such as gpuheal.io/simfleet", o.JobsManagedBy)
		}
	}
	return nil
}

// checkJobName is the name of the Job that runs check for owner (an
// incident's UID, or a node's for join and idle checks) in attempt:
// deterministic, so a restarted controller finds its Job again, and new
// for every attempt, so a later attempt never reads an earlier result.
// It fits the 63 characters of a label value (check names have at most 20).
func checkJobName(owner string, attempt int32, check string) string {
	sum := sha256.Sum256([]byte(owner + "/" + strconv.Itoa(int(attempt)) + "/" + check))
	return "gpuheal-check-" + hex.EncodeToString(sum[:])[:10] + "-" + check
}

// checkJobSpec is what a check Job is built from.
type checkJobSpec struct {
	Name, Namespace string
	Node            *corev1.Node
	Check           v1alpha1.ValidationCheck
	Purpose         string
	Incident        string // the NodeRemediation, for repair checks
	// PriorityClass of the pod: idle checks run at the lowest priority, so
	// that any workload preempts them.
	PriorityClass string
	Image         string
	Command       []string
	ManagedBy     string
}

// checkCommand is the check's command: the policy's own, or the kind's
// default for a node with gpus GPUs.
func checkCommand(c v1alpha1.ValidationCheck, gpus int64) []string {
	if len(c.Command) > 0 {
		return c.Command
	}
	switch c.Kind {
	case v1alpha1.CheckDCGM:
		// The image has no host engine running: start one in the pod.
		return []string{"sh", "-c", fmt.Sprintf("nv-hostengine && exec dcgmi diag -r %d -j", c.Level)}
	case v1alpha1.CheckNCCL:
		return []string{"all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", strconv.FormatInt(gpus, 10)}
	case v1alpha1.CheckNVBandwidth:
		return []string{"nvbandwidth", "-t", "device_to_device_memcpy_read_ce"}
	}
	return nil
}

// checkImage is the image that runs c: the policy's, else the controller's
// default for its kind. Nothing of the node chooses it: the node is the
// one being judged.
func checkImage(c v1alpha1.ValidationCheck, images map[v1alpha1.CheckKind]string) (string, error) {
	if c.Image != "" {
		return c.Image, nil
	}
	if img := images[c.Kind]; img != "" {
		return img, nil
	}
	return "", fmt.Errorf("no image for %s checks: set the check's image in the policy or the controller's --check-image-%s", c.Kind, strings.ToLower(string(c.Kind)))
}

// nodeGPUs is the node's allocatable nvidia.com/gpu: what a check Job
// requests, so that nothing else runs on the GPUs while they are tested.
func nodeGPUs(n *corev1.Node) int64 {
	q, ok := n.Status.Allocatable[corev1.ResourceName(v1alpha1.ResourceNvidiaGPU)]
	if !ok {
		return 0
	}
	return q.Value()
}

// checkJob builds the Job of the wire contract (docs/health-gate.md).
func checkJob(s checkJobSpec) *batchv1.Job {
	gpus := nodeGPUs(s.Node)
	labels := map[string]string{
		v1alpha1.LabelCheck:        s.Check.Name,
		v1alpha1.LabelCheckKind:    string(s.Check.Kind),
		v1alpha1.LabelCheckNode:    v1alpha1.NodeLabelValue(s.Node.Name),
		v1alpha1.LabelCheckPurpose: s.Purpose,
	}
	podLabels := map[string]string{labelJobName: s.Name}
	for k, v := range labels {
		podLabels[k] = v
	}
	podAnn := map[string]string{v1alpha1.AnnotationCheckNodeName: s.Node.Name}
	ann := map[string]string{v1alpha1.AnnotationCheckNodeName: s.Node.Name}
	if s.Incident != "" {
		ann[v1alpha1.AnnotationCheckIncident] = s.Incident
	}
	timeout := int64(checkTimeout(s.Check).Seconds())
	ttl := int32(checkJobTTL)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels, Annotations: ann},
		Spec: batchv1.JobSpec{
			BackoffLimit:            new(int32),
			ActiveDeadlineSeconds:   &timeout,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnn},
				Spec: corev1.PodSpec{
					RestartPolicy:     corev1.RestartPolicyNever,
					PriorityClassName: s.PriorityClass,
					// The check talks to the GPUs, never to the API server:
					// a token on the suspect node would only be a leak.
					AutomountServiceAccountToken: new(bool),
					Containers: []corev1.Container{{
						Name: checkContainer, Image: s.Image, Command: s.Command,
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
							corev1.ResourceName(v1alpha1.ResourceNvidiaGPU): *resource.NewQuantity(gpus, resource.DecimalSI),
						}},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					// Pinned like a DaemonSet's pod: by field, so a node's
					// labels cannot move the check elsewhere.
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{s.Node.Name}}},
						}}},
					}},
					Tolerations: []corev1.Toleration{
						{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
						{Key: v1alpha1.TaintUnhealthy, Operator: corev1.TolerationOpExists},
						{Key: v1alpha1.TaintValidating, Operator: corev1.TolerationOpExists},
					},
				},
			},
		},
	}
	if s.ManagedBy != "" {
		job.Spec.ManagedBy = &s.ManagedBy
	}
	return job
}

// checkContainer is the name of a check pod's one container.
const checkContainer = "check"
