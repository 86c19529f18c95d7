package aws

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ErrMalformedProviderID says a node's spec.providerID is not the
// aws:///<zone>/<instance-id> the kubelet and cloud-provider-aws write. It is
// permanent: asking again will not help.
var ErrMalformedProviderID = errors.New("malformed EC2 provider ID")

const providerIDPrefix = "aws:///"

var (
	// A zone is its region plus a suffix: a letter for an Availability Zone
	// (us-east-1a), or dash-separated parts for a Local Zone (us-west-2-lax-1a)
	// or Wavelength Zone (us-east-1-wl1-bos-wlz-1). The region is everything
	// up to the first group of digits that follows two or more letter groups,
	// which also covers us-gov-west-1a, cn-north-1a and us-iso-east-1a.
	zoneRE = regexp.MustCompile(`^([a-z]+(?:-[a-z]+)+-[0-9]+)(?:[a-z]+|(?:-[a-z0-9]+)+)$`)
	// Instance ids have 8 hex digits (before 2016) or 17.
	instanceIDRE = regexp.MustCompile(`^i-[0-9a-f]{8}(?:[0-9a-f]{9})?$`)
)

// instance is where one node's machine lives.
type instance struct {
	ID     string // i-0123456789abcdef0
	Zone   string // us-east-1a
	Region string // us-east-1
}

// parseProviderID reads aws:///<zone>/<instance-id>.
func parseProviderID(providerID string) (instance, error) {
	rest, ok := strings.CutPrefix(providerID, providerIDPrefix)
	if !ok {
		return instance{}, fmt.Errorf("%w: %q does not start with %s (want aws:///<zone>/<instance-id>)", ErrMalformedProviderID, providerID, providerIDPrefix)
	}
	zone, id, ok := strings.Cut(rest, "/")
	if !ok {
		return instance{}, fmt.Errorf("%w: %q has no availability zone (want aws:///<zone>/<instance-id>)", ErrMalformedProviderID, providerID)
	}
	m := zoneRE.FindStringSubmatch(zone)
	if m == nil {
		return instance{}, fmt.Errorf("%w: %q: %q is not an availability zone", ErrMalformedProviderID, providerID, zone)
	}
	if !instanceIDRE.MatchString(id) {
		return instance{}, fmt.Errorf("%w: %q: %q is not an EC2 instance id", ErrMalformedProviderID, providerID, id)
	}
	return instance{ID: id, Zone: zone, Region: m[1]}, nil
}

// instanceOf finds the node's machine, naming the node when it cannot.
func instanceOf(node *corev1.Node) (instance, error) {
	if node == nil {
		return instance{}, errors.New("aws provider: nil node")
	}
	in, err := parseProviderID(node.Spec.ProviderID)
	if err != nil {
		return instance{}, fmt.Errorf("node %s: spec.providerID: %w", node.Name, err)
	}
	return in, nil
}
