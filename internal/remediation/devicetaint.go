package remediation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// With Dynamic Resource Allocation the scheduler hands out devices that a
// DRA driver (NVIDIA's gpu.nvidia.com) publishes in ResourceSlices, and a
// DeviceTaintRule keeps it off one device: the controller taints exactly
// the GPU it is about to reset, NoSchedule by default (its pods leave
// through the Eviction API, where PodDisruptionBudgets hold, not through
// the taint's eviction) or NoExecute where the policy says its pods must
// leave whatever their budgets, and removes the rule when the incident
// ends. Clusters without
// the resource.k8s.io/v1 API, or nodes whose GPUs no driver publishes,
// get no rule and lose nothing: the device plugin path (the agent's
// gpu-healthy-count label, the device plugin's own health check) stays.

// resourceSliceNodeField selects a node's ResourceSlices on the API server.
const resourceSliceNodeField = "spec.nodeName"

// deviceAttributesMatching are the attribute names, unqualified or in the
// driver's domain, that name a GPU in NVIDIA's DRA driver: its UUID and
// its PCI bus id.
const (
	deviceAttributeUUID  = "uuid"
	deviceAttributeBusID = "pcieBusID"
)

// deviceTaintKey is the taint's key on a device; its value is the
// incident's reason.
const deviceTaintKey = v1alpha1.TaintUnhealthy

// draDevice is one device of a ResourceSlice.
type draDevice struct {
	driver, pool, name string
}

// devicesOfGPUs finds, in the node's ResourceSlices, the devices that are
// the given GPUs (by UUID, else by PCI bus id).
func devicesOfGPUs(ctx context.Context, reader client.Reader, node string, gpus []v1alpha1.GPURef) ([]draDevice, error) {
	var slices resourcev1.ResourceSliceList
	if err := reader.List(ctx, &slices, client.MatchingFields{resourceSliceNodeField: node}); err != nil {
		return nil, fmt.Errorf("listing ResourceSlices of node %s: %w", node, err)
	}
	var found []draDevice
	for _, s := range slices.Items {
		if s.Spec.NodeName == nil || *s.Spec.NodeName != node {
			continue // the API server's selector did that; a cache may not
		}
		for _, d := range s.Spec.Devices {
			for _, g := range gpus {
				if deviceIsGPU(s.Spec.Driver, d.Attributes, g) {
					found = append(found, draDevice{driver: s.Spec.Driver, pool: s.Spec.Pool.Name, name: d.Name})
				}
			}
		}
	}
	return found, nil
}

func deviceIsGPU(driver string, attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, g v1alpha1.GPURef) bool {
	attr := func(name string) string {
		for _, key := range []string{name, driver + "/" + name} {
			if a, ok := attrs[resourcev1.QualifiedName(key)]; ok && a.StringValue != nil {
				return *a.StringValue
			}
		}
		return ""
	}
	if g.UUID != "" && attr(deviceAttributeUUID) != "" {
		return strings.EqualFold(attr(deviceAttributeUUID), g.UUID)
	}
	return g.BusID != "" && samePCIAddress(attr(deviceAttributeBusID), g.BusID)
}

// samePCIAddress compares bus ids written with a 4- or 8-digit domain
// (0000:1b:00.0 and 00000000:1B:00.0 are one).
func samePCIAddress(a, b string) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		if i := strings.IndexByte(s, ':'); i > 4 {
			s = s[i-4:]
		}
		return s
	}
	return a != "" && norm(a) == norm(b)
}

// deviceTaintRuleName is the rule of one GPU of one incident.
func deviceTaintRuleName(incident string, d draDevice) string {
	name := incident + "-" + strings.ToLower(d.name)
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.TrimRight(name, "-.")
}

// taintGPUDevices creates a DeviceTaintRule with the effect for each of
// the GPUs that a DRA driver publishes on the node, and returns their
// names; none when the cluster serves no DeviceTaintRules.
func taintGPUDevices(ctx context.Context, c client.Client, reader client.Reader, nr *v1alpha1.NodeRemediation, gpus []v1alpha1.GPURef, effect resourcev1.DeviceTaintEffect) ([]string, error) {
	devices, err := devicesOfGPUs(ctx, reader, nr.Spec.NodeName, gpus)
	if err != nil {
		if noDRA(err) {
			return nil, nil
		}
		return nil, err
	}
	var names []string
	for _, d := range devices {
		driver, pool, device := d.driver, d.pool, d.name
		rule := &resourcev1.DeviceTaintRule{
			ObjectMeta: metav1.ObjectMeta{
				Name:   deviceTaintRuleName(nr.Name, d),
				Labels: map[string]string{v1alpha1.LabelPartOf: v1alpha1.LabelPartOfValue, incidentLabel: v1alpha1.NodeLabelValue(nr.Name)},
			},
			Spec: resourcev1.DeviceTaintRuleSpec{
				DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &device},
				Taint: resourcev1.DeviceTaint{Key: deviceTaintKey, Value: taintValue(nr.Spec.Trigger.Reason),
					Effect: effect},
			},
		}
		switch err := c.Create(ctx, rule); {
		case err == nil, apierrors.IsAlreadyExists(err):
			names = append(names, rule.Name)
		case noDRA(err):
			return names, nil
		default:
			return names, fmt.Errorf("tainting device %s/%s/%s of node %s: %w", driver, pool, device, nr.Spec.NodeName, err)
		}
	}
	return names, nil
}

// untaintGPUDevices deletes the incident's DeviceTaintRules.
func untaintGPUDevices(ctx context.Context, c client.Client, incident string) error {
	err := c.DeleteAllOf(ctx, &resourcev1.DeviceTaintRule{}, client.MatchingLabels{incidentLabel: v1alpha1.NodeLabelValue(incident)})
	if err != nil && !noDRA(err) {
		return fmt.Errorf("removing the device taints of incident %s: %w", incident, err)
	}
	return nil
}

// incidentLabel on a DeviceTaintRule names the incident that made it.
const incidentLabel = "gpuheal.io/incident"

// taintValue is a device taint's value: at most 63 characters of a
// label value's alphabet.
func taintValue(reason string) string {
	var b strings.Builder
	for _, r := range reason {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		}
	}
	s := b.String()
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-_.")
}

// noDRA: the cluster does not serve resource.k8s.io/v1 (an older
// Kubernetes, or the API switched off).
func noDRA(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) && isResourceNotFound(err)
}

func isResourceNotFound(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d == nil || d.Name == ""
}
