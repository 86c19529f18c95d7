package remediation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// causeOf is what the incident opened for trigger t on node n has in
// common with others that fail the same way.
func causeOf(n *corev1.Node, t v1alpha1.Trigger) v1alpha1.Cause {
	c := v1alpha1.Cause{Condition: t.Type + "/" + t.Reason}
	if n == nil {
		return c
	}
	l := n.Labels
	c.DriverVersion = l[v1alpha1.LabelNvidiaDriverVersion]
	if c.DriverVersion == "" && l[v1alpha1.LabelNvidiaDriverMajor] != "" {
		// Older GPU feature discovery publishes the version in parts.
		c.DriverVersion = strings.Join([]string{l[v1alpha1.LabelNvidiaDriverMajor], l[v1alpha1.LabelNvidiaDriverMinor], l[v1alpha1.LabelNvidiaDriverRev]}, ".")
	}
	c.KernelVersion = n.Status.NodeInfo.KernelVersion
	c.Image = l[v1alpha1.LabelEKSNodegroupImage]
	if c.Image == "" {
		c.Image = n.Status.NodeInfo.OSImage
	}
	c.InstanceType = l[v1alpha1.LabelInstanceType]
	c.Zone = l[v1alpha1.LabelZone]
	return c
}

// causeID is a short, stable name of a cause: the id of its breaker.
func causeID(c v1alpha1.Cause) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%q/%q/%q/%q/%q/%q", c.Condition, c.DriverVersion, c.KernelVersion, c.Image, c.InstanceType, c.Zone))
	return hex.EncodeToString(h[:5])
}

// describeCause says the cause in words for Events and conditions.
func describeCause(c v1alpha1.Cause) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	add("condition", c.Condition)
	add("driver", c.DriverVersion)
	add("kernel", c.KernelVersion)
	add("image", c.Image)
	add("instance type", c.InstanceType)
	add("zone", c.Zone)
	return strings.Join(parts, ", ")
}
