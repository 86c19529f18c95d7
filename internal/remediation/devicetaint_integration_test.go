//go:build integration

package remediation

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/poll"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

const testDRADriver = "gpu.example.com"

func testGPUUUID(i int) string { return fmt.Sprintf("GPU-00000000-0000-0000-0000-00000000000%d", i) }

// TestDeviceTaintRuleKeepsTheSchedulerOffTheGPU: on a real API server with
// the real kube-scheduler, a DRA driver publishes a node's 8 GPUs; the
// controller's DeviceTaintRule for GPU 3 keeps a claim that needs exactly
// that GPU from being allocated, while a claim for 7 GPUs is allocated the
// other seven; once the rule is removed the first claim is allocated too.
func TestDeviceTaintRuleKeepsTheSchedulerOffTheGPU(t *testing.T) {
	t.Parallel()
	ctx, c, node := draNode(t, "dra")

	nr := &v1alpha1.NodeRemediation{ObjectMeta: metav1.ObjectMeta{Name: node + "-0badc0de"}}
	nr.Spec.NodeName, nr.Spec.Trigger.Reason = node, "NvidiaDoubleBitError"
	rules, err := taintGPUDevices(ctx, c, c, nr, []v1alpha1.GPURef{{Index: 3, UUID: testGPUUUID(3)}}, resourcev1.DeviceTaintEffectNoSchedule)
	if err != nil || len(rules) != 1 {
		t.Fatalf("taint rules %v, %v; want one", rules, err)
	}
	var rule resourcev1.DeviceTaintRule
	mustNil(t, c.Get(ctx, client.ObjectKey{Name: rules[0]}, &rule))
	if d := rule.Spec.DeviceSelector; d == nil || *d.Device != "gpu-3" || *d.Pool != node || rule.Spec.Taint.Effect != resourcev1.DeviceTaintEffectNoSchedule {
		t.Fatalf("rule %+v, want NoSchedule on %s/gpu-3", rule.Spec, node)
	}

	claimPod(ctx, t, c, node, "wants-gpu3", resourcev1.ExactDeviceRequest{DeviceClassName: testDRADriver,
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.attributes[%q].uuid == %q", testDRADriver, testGPUUUID(3))}}}})
	claimPod(ctx, t, c, node, "wants-seven", resourcev1.ExactDeviceRequest{DeviceClassName: testDRADriver,
		AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 7})

	seven := waitAllocated(ctx, t, c, "wants-seven")
	if len(seven) != 7 || slices.Contains(seven, "gpu-3") {
		t.Errorf("the 7-GPU claim got %v, want seven devices without the tainted gpu-3", seven)
	}
	mustNil(t, poll.Until(ctx, "wants-gpu3 unschedulable", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "wants-gpu3"}, &p); err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("scheduled onto %s with GPU 3 tainted", p.Spec.NodeName)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	}))

	mustNil(t, untaintGPUDevices(ctx, c, nr.Name))
	var left resourcev1.DeviceTaintRuleList
	mustNil(t, c.List(ctx, &left))
	if len(left.Items) != 0 {
		t.Fatalf("%d device taint rules left after the incident", len(left.Items))
	}
	// The 7-GPU claim holds the other seven: GPU 3 is the one left.
	if got := waitAllocated(ctx, t, c, "wants-gpu3"); len(got) != 1 || got[0] != "gpu-3" {
		t.Errorf("after the rule's removal the claim got %v, want [gpu-3]", got)
	}
}

// TestNoExecuteDeviceTaintEvictsOnlyThatGPUsPods: a policy whose GPU's pods
// must leave whatever their budgets taints the device NoExecute, and the
// real kube-controller-manager's device taint eviction controller deletes
// the pod whose claim holds that GPU, and no other pod of the node.
func TestNoExecuteDeviceTaintEvictsOnlyThatGPUsPods(t *testing.T) {
	t.Parallel()
	ctx, c, node := draNode(t, "dra-noexec")
	for _, i := range []int{3, 5} {
		claimPod(ctx, t, c, node, fmt.Sprintf("on-gpu%d", i), resourcev1.ExactDeviceRequest{DeviceClassName: testDRADriver,
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.attributes[%q].uuid == %q", testDRADriver, testGPUUUID(i))}}}})
		waitAllocated(ctx, t, c, fmt.Sprintf("on-gpu%d", i))
	}
	on5 := waitScheduled(ctx, t, c, "on-gpu5")

	nr := &v1alpha1.NodeRemediation{ObjectMeta: metav1.ObjectMeta{Name: node + "-0badc0de"}}
	nr.Spec.NodeName, nr.Spec.Trigger.Reason = node, "NvidiaDoubleBitError"
	rules, err := taintGPUDevices(ctx, c, c, nr, []v1alpha1.GPURef{{Index: 3, UUID: testGPUUUID(3)}}, resourcev1.DeviceTaintEffectNoExecute)
	if err != nil || len(rules) != 1 {
		t.Fatalf("taint rules %v, %v; want one", rules, err)
	}
	mustNil(t, poll.Until(ctx, "the pod on the tainted GPU deleted", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "on-gpu3"}, &p)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && p.DeletionTimestamp != nil, client.IgnoreNotFound(err)
	}))
	var p corev1.Pod
	mustNil(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "on-gpu5"}, &p))
	if p.DeletionTimestamp != nil || p.UID != on5.UID {
		t.Errorf("the pod on untainted GPU 5 was deleted or replaced (deletion %v, uid %s, was %s)", p.DeletionTimestamp, p.UID, on5.UID)
	}
}

// waitScheduled waits until the pod is bound to a node and returns it.
func waitScheduled(ctx context.Context, t *testing.T, c client.Client, name string) corev1.Pod {
	t.Helper()
	var p corev1.Pod
	mustNil(t, poll.Until(ctx, "pod "+name+" scheduled", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &p)
		return err == nil && p.Spec.NodeName != "", err
	}))
	return p
}

// draNode starts a real API server with the scheduler, the controller
// manager and kwok, and one Ready kwok node whose 8 GPUs testDRADriver
// publishes; the context ends with the test or after 4 minutes.
func draNode(t *testing.T, prefix string) (context.Context, client.Client, string) {
	t.Helper()
	testcluster.RequireBinaries(t, true, true)
	env := testcluster.Start(t, testenv.Options{Kwok: true, Workloads: true})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	nodes, err := testenv.CreateGPUNodes(ctx, env.Client, prefix, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitNodesReady(ctx, env.Client, nodes); err != nil {
		t.Fatal(err)
	}
	publishGPUs(ctx, t, env.Client, nodes[0])
	return ctx, env.Client, nodes[0]
}

// publishGPUs makes testDRADriver's DeviceClass (once per cluster) and a
// ResourceSlice of the node's 8 GPUs, named gpu-0…gpu-7 with their UUIDs.
func publishGPUs(ctx context.Context, t *testing.T, c client.Client, node string) {
	t.Helper()
	mustNil(t, client.IgnoreAlreadyExists(c.Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: testDRADriver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", testDRADriver)}}}}})))
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{Driver: testDRADriver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
	for i := range 8 {
		uuid, index := testGPUUUID(i), int64(i)
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				deviceAttributeUUID: {StringValue: &uuid}, "index": {IntValue: &index}}})
	}
	mustNil(t, c.Create(ctx, slice))
}

// claimPod creates a ResourceClaim of one request and a pod on node that
// uses it.
func claimPod(ctx context.Context, t *testing.T, c client.Client, node, name string, req resourcev1.ExactDeviceRequest) {
	t.Helper()
	mustNil(t, c.Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &req}}}}}))
	claim := name
	mustNil(t, c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:   map[string]string{corev1.LabelHostname: node},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}},
			Containers: []corev1.Container{{Name: "c", Image: "trainer:sim",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
		}}))
}

// waitAllocated waits until the claim is allocated and returns its devices.
func waitAllocated(ctx context.Context, t *testing.T, c client.Client, name string) []string {
	t.Helper()
	var devices []string
	mustNil(t, poll.Until(ctx, "claim "+name+" allocated", 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		var claim resourcev1.ResourceClaim
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &claim); err != nil {
			return false, err
		}
		if claim.Status.Allocation == nil {
			return false, nil
		}
		devices = devices[:0]
		for _, r := range claim.Status.Allocation.Devices.Results {
			devices = append(devices, r.Device)
		}
		return true, nil
	}))
	return devices
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
