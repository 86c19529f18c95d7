package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
)

// newFleetCommand is `gpuheal fleet`: the fleet as a whole, over time.
func newFleetCommand(out io.Writer, k *cluster) *cobra.Command {
	cmd := &cobra.Command{Use: "fleet", Short: "The fleet as a whole, over time: its reliability report"}
	cmd.AddCommand(newFleetReportCommand(out, k))
	return cmd
}

// readFleet reads the fleet view: the named nodes (all must exist), else
// those the selector picks; their open incidents; the policies' breakers.
// Rows come worst first.
func readFleet(ctx context.Context, c client.Client, selector string, names []string) (fleetview.View, error) {
	nodes, err := readNodes(ctx, c, selector, names)
	if err != nil {
		return fleetview.View{}, err
	}
	var rems gpuhealv1.NodeRemediationList
	if err := c.List(ctx, &rems); err != nil && !isNoKind(err) {
		return fleetview.View{}, fmt.Errorf("listing NodeRemediations: %w", err)
	}
	var policies gpuhealv1.RemediationPolicyList
	if err := c.List(ctx, &policies); err != nil && !isNoKind(err) {
		return fleetview.View{}, fmt.Errorf("listing RemediationPolicies: %w", err)
	}
	v := fleetview.Build(nodes, rems.Items)
	v.Policies = fleetview.PoliciesOf(policies.Items)
	fleetview.SortWorstFirst(v.Nodes)
	return v, nil
}

// readNodes gets the named nodes, or lists those the selector picks ("":
// all).
func readNodes(ctx context.Context, c client.Client, selector string, names []string) ([]corev1.Node, error) {
	if len(names) > 0 {
		nodes := make([]corev1.Node, len(names))
		for i, name := range names {
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &nodes[i]); err != nil {
				return nil, fmt.Errorf("reading node %s: %w", name, err)
			}
		}
		return nodes, nil
	}
	var opts []client.ListOption
	if selector != "" {
		sel, err := parseSelector(selector)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	var list corev1.NodeList
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	return list.Items, nil
}

func parseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("--selector %q: %w", s, err)
	}
	return sel, nil
}

// isNoKind: the cluster has no such resource (our CRDs not installed).
func isNoKind(err error) bool {
	var noMatch *meta.NoKindMatchError
	return errors.As(err, &noMatch) || meta.IsNoMatchError(err)
}
