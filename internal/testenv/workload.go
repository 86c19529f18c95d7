package testenv

import (
	"context"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/internal/poll"
)

// WorkloadLabel marks the pods of a GPU workload: its value is the name.
const WorkloadLabel = "gpuheal.io/workload"

// CreateGPUWorkload creates a Deployment of replicas pods, each asking for
// gpusPerPod GPUs, and a PodDisruptionBudget that lets one pod go at a
// time: a training job's shape. It needs Options.Workloads (the
// Deployment controller and the scheduler) to get pods, and kwok to run
// them.
func CreateGPUWorkload(ctx context.Context, c client.Client, namespace, name string, replicas int32, gpusPerPod int64) error {
	return CreateGPUWorkloadOn(ctx, c, namespace, name, replicas, gpusPerPod, "")
}

// CreateGPUWorkloadOn is CreateGPUWorkload with every pod on one node
// (none: anywhere), and then without a PodDisruptionBudget: an inference
// service of one-GPU pods sharing a node, whose GPUs fail one at a time.
func CreateGPUWorkloadOn(ctx context.Context, c client.Client, namespace, name string, replicas int32, gpusPerPod int64, node string) error {
	return createGPUWorkload(ctx, c, namespace, name, replicas, gpusPerPod, node, nil)
}

// createGPUWorkload is CreateGPUWorkloadOn with the pods' node affinity
// (nil: none).
func createGPUWorkload(ctx context.Context, c client.Client, namespace, name string, replicas int32, gpusPerPod int64, node string, affinity *corev1.Affinity) error {
	labels := map[string]string{WorkloadLabel: name}
	var selector map[string]string
	if node != "" {
		selector = map[string]string{corev1.LabelHostname: node}
	}
	gpus := *resource.NewQuantity(gpusPerPod, resource.DecimalSI)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "trainer", Image: "trainer:sim",
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{GPUResource: gpus},
							Limits:   corev1.ResourceList{GPUResource: gpus},
						},
					}},
					// Kwok pods stop at once; a real trainer checkpoints.
					TerminationGracePeriodSeconds: new(int64),
					NodeSelector:                  selector,
					Affinity:                      affinity,
				},
			},
		},
	}
	if err := c.Create(ctx, dep); err != nil {
		return fmt.Errorf("creating deployment %s/%s: %w", namespace, name, err)
	}
	if node != "" {
		// Pods bound to one node cannot move: a budget would hold every
		// whole-node drain of it for good.
		return nil
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	if err := c.Create(ctx, pdb); err != nil {
		return fmt.Errorf("creating PodDisruptionBudget %s/%s: %w", namespace, name, err)
	}
	return nil
}

// WaitWorkloadRunning waits until the workload's pods are all Running and
// its PodDisruptionBudget allows a disruption, which is when a drain can
// begin.
func WaitWorkloadRunning(ctx context.Context, c client.Client, namespace, name string, replicas int) error {
	what := fmt.Sprintf("workload %s/%s to run %d pods", namespace, name, replicas)
	return poll.Until(ctx, what, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		running, allowed, err := workloadState(ctx, c, namespace, name)
		if err != nil {
			return false, fmt.Errorf("reading workload %s/%s: %w", namespace, name, err)
		}
		if running != replicas || allowed <= 0 {
			return false, fmt.Errorf("%d of %d pods running, PDB allows %d disruptions", running, replicas, allowed)
		}
		return true, nil
	})
}

func workloadState(ctx context.Context, c client.Client, namespace, name string) (running int, allowed int32, err error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{WorkloadLabel: name}); err != nil {
		return 0, 0, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	var pdb policyv1.PodDisruptionBudget
	switch err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pdb); {
	case apierrors.IsNotFound(err):
		return running, math.MaxInt32, nil // no budget: any pod may go
	case err != nil:
		return running, 0, err
	}
	return running, pdb.Status.DisruptionsAllowed, nil
}

// TrainingFleet is the demo's and the soak test's cluster: n GPU nodes
// named prefix-0000…, Ready, and one Deployment per job in namespace, each
// of one 8-GPU pod per node on three eighths of the fleet (the jobs fill
// three quarters of it, which leaves room to move evicted pods), running,
// with a PodDisruptionBudget of maxUnavailable 1. The jobs' pods carry
// affinity (nil: none), e.g. tieraffinity.PreferHealthier.
func TrainingFleet(ctx context.Context, c client.Client, prefix string, n int, namespace string, affinity *corev1.Affinity, jobs ...string) error {
	names, err := CreateGPUNodes(ctx, c, prefix, n)
	if err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := WaitNodesReady(waitCtx, c, names); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	perJob := int32(max(n*3/8, 1))
	for _, job := range jobs {
		if err := createGPUWorkload(ctx, c, namespace, job, perJob, 8, "", affinity); err != nil {
			return err
		}
	}
	for _, job := range jobs {
		if err := WaitWorkloadRunning(waitCtx, c, namespace, job, int(perJob)); err != nil {
			return err
		}
	}
	return nil
}

// NodesWithoutPods are the fleet's nodes (prefix-0000…, n of them), in
// order, that run no pod of namespace: where TrainingFleet left room.
func NodesWithoutPods(ctx context.Context, c client.Client, prefix string, n int, namespace string) ([]string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s: %w", namespace, err)
	}
	used := map[string]bool{}
	for _, p := range pods.Items {
		used[p.Spec.NodeName] = true
	}
	var free []string
	for i := range n {
		if name := NodeName(prefix, i); !used[name] {
			free = append(free, name)
		}
	}
	return free, nil
}
