package remediation

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// NVIDIA's device plugin marks a GPU Unhealthy on its critical Xids and
// never marks it healthy again: only a restarted plugin advertises it (it
// starts with every GPU healthy). So after a verified reset, on a node
// whose allocatable nvidia.com/gpu is short of its capacity and whose
// agent reports no faulty GPU at all, the controller deletes the plugin's
// pod on that node; its DaemonSet starts a new one. A node with another
// faulty GPU keeps its plugin as it is: a restarted plugin would hand that
// GPU out again.

// DefaultDevicePluginSelectors match NVIDIA's device plugin pods as its
// Helm chart, the GPU Operator and its static manifest label them.
var DefaultDevicePluginSelectors = []string{
	"app.kubernetes.io/name=nvidia-device-plugin",
	"app=nvidia-device-plugin-daemonset",
	"name=nvidia-device-plugin-ds",
}

// ParseDevicePluginSelectors parses label selectors, naming the bad one.
func ParseDevicePluginSelectors(specs []string) ([]labels.Selector, error) {
	out := make([]labels.Selector, 0, len(specs))
	for _, s := range specs {
		sel, err := labels.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("device plugin selector %q: %w", s, err)
		}
		if sel.Empty() {
			return nil, fmt.Errorf("device plugin selector %q selects every pod", s)
		}
		out = append(out, sel)
	}
	return out, nil
}

// gpusShort says whether the node advertises fewer GPUs than it has.
func gpusShort(n *corev1.Node) bool {
	c, ok := n.Status.Capacity[v1alpha1.ResourceNvidiaGPU]
	a := n.Status.Allocatable[v1alpha1.ResourceNvidiaGPU]
	return ok && a.Cmp(c) < 0
}

// restartDevicePlugin deletes the device plugin's pods on the node when
// the reset left its allocatable short and no GPU is reported faulty; it
// returns the pods it deleted.
func (r *remediationReconciler) restartDevicePlugin(ctx context.Context, in *incident) ([]string, error) {
	if len(r.devicePlugins) == 0 || in.node == nil || !gpusShort(in.node) {
		return nil, nil
	}
	if raw, ok := in.node.Annotations[v1alpha1.AnnotationGPUFaults]; ok {
		if report, err := parseGPUFaults(raw); err != nil || len(report.GPUs) > 0 {
			return nil, nil // a GPU is still faulty, or the report cannot say it is not
		}
	}
	var pods corev1.PodList
	if err := r.reader.List(ctx, &pods, client.MatchingFields{podNodeField: in.nr.Spec.NodeName}); err != nil {
		return nil, fmt.Errorf("listing pods of node %s: %w", in.nr.Spec.NodeName, err)
	}
	since := enteredAt(in.nr, v1alpha1.PhaseVerifying)
	var deleted []string
	for i := range pods.Items {
		p := &pods.Items[i]
		// A plugin started since the reset's answer already sees the GPU
		// healthy: a repeated step must not restart it again.
		if p.DeletionTimestamp != nil || !isDaemonSetPod(p) || !r.isDevicePlugin(p) || !p.CreationTimestamp.Time.Before(since) {
			continue
		}
		if err := r.client.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("restarting device plugin pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		deleted = append(deleted, p.Namespace+"/"+p.Name)
	}
	return deleted, nil
}

func (r *remediationReconciler) isDevicePlugin(p *corev1.Pod) bool {
	set := labels.Set(p.Labels)
	for _, sel := range r.devicePlugins {
		if sel.Matches(set) {
			return true
		}
	}
	return false
}

func devicePluginNote(deleted []string) string {
	if len(deleted) == 0 {
		return ""
	}
	return "; restarted the device plugin (" + strings.Join(deleted, ", ") + ") so that it advertises the GPU again"
}
