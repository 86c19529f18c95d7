package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
	"github.com/gpuheal/gpuheal/internal/nodemark"
)

type uncordonOptions struct {
	kube      *cluster
	ours, yes bool
}

func newUncordonCommand(out io.Writer, k *cluster) *cobra.Command {
	o := &uncordonOptions{kube: k}
	cmd := &cobra.Command{
		Use:   "uncordon --ours [NODE...] [--yes]",
		Short: "Remove gpuheal's own cordons and taints, and nobody else's",
		Long: `Lists every node (or each NODE) that carries a mark of gpuheal's: a cordon the controller
recorded as its own (annotation ` + gpuhealv1.AnnotationCordonedBy + `) or its taint
` + gpuhealv1.TaintUnhealthy + `. It changes nothing unless --yes is given: then it removes the
taint and the annotations, and lifts the cordon unless the node was cordoned by someone else
before gpuheal (annotation ` + gpuhealv1.AnnotationWasUnschedulable + `). A cordon without
gpuheal's record is never lifted. A node with an open incident is skipped: the controller would
cordon it again (end the incident, or remove the controller first).

--ours is required: the command never touches a cordon that is not gpuheal's, and says so.
It is what helm uninstall's release Job does to the nodes, for when that Job did not run.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !o.ours {
				return &ExitError{Code: 2, Err: errors.New("gpuheal uncordon removes only gpuheal's own cordons and taints: pass --ours (kubectl uncordon lifts any cordon)")}
			}
			return runUncordon(cmd.Context(), out, o, args)
		},
	}
	cmd.Flags().BoolVar(&o.ours, "ours", false, "required: only gpuheal's own cordons and taints")
	cmd.Flags().BoolVar(&o.yes, "yes", false, "make the change (without it: only say what would change)")
	return cmd
}

func runUncordon(ctx context.Context, out io.Writer, o *uncordonOptions, names []string) error {
	c, err := o.kube.client()
	if err != nil {
		return err
	}
	nodes, err := readNodes(ctx, c, "", names)
	if err != nil {
		return err
	}
	var rems gpuhealv1.NodeRemediationList
	if err := c.List(ctx, &rems); err != nil {
		return fmt.Errorf("listing NodeRemediations: %w", err)
	}
	open := fleetview.OpenIncidents(rems.Items)
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	verb := "would remove"
	if o.yes {
		verb = "removed"
	}
	var errs []error
	changed := 0
	for i := range nodes {
		n := &nodes[i]
		switch {
		case !nodemark.Ours(n):
			if len(names) > 0 {
				fmt.Fprintf(out, "%s: no cordon or taint of gpuheal's; left alone\n", n.Name)
			}
			continue
		case open[n.Name] != nil:
			fmt.Fprintf(out, "%s: skipped: incident %s is open (the controller would cordon it again)\n", n.Name, open[n.Name].Name)
			continue
		}
		what := describeRelease(n)
		if o.yes {
			if err := releaseNode(ctx, c, n); err != nil {
				errs = append(errs, err)
				fmt.Fprintf(out, "%s: failed: %v\n", n.Name, err)
				continue
			}
		}
		changed++
		fmt.Fprintf(out, "%s: %s %s\n", n.Name, verb, what)
	}
	if !o.yes && changed > 0 {
		fmt.Fprintf(out, "%d nodes; nothing changed (rerun with --yes)\n", changed)
	}
	return errors.Join(errs...)
}

// describeRelease says what nodemark.Release does to n.
func describeRelease(n *corev1.Node) string {
	switch {
	case n.Annotations[gpuhealv1.AnnotationCordonedBy] == "":
		what := "gpuheal's " + ourTaints(n)
		if n.Spec.Unschedulable {
			what += "; the cordon is not gpuheal's and stays"
		}
		return what
	case n.Annotations[gpuhealv1.AnnotationWasUnschedulable] == "true":
		return "gpuheal's " + ourTaints(n) + " and record; the cordon someone set before gpuheal stays"
	}
	return "gpuheal's cordon and " + ourTaints(n) + " (incident " + n.Annotations[gpuhealv1.AnnotationCordonedBy] + ")"
}

// ourTaints names the taints of gpuheal's that n carries.
func ourTaints(n *corev1.Node) string {
	var keys []string
	for _, key := range []string{gpuhealv1.TaintUnhealthy, gpuhealv1.TaintValidating} {
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key }) {
			keys = append(keys, key)
		}
	}
	switch len(keys) {
	case 0:
		return "record"
	case 1:
		return "taint " + keys[0]
	}
	return "taints " + strings.Join(keys, " and ")
}

// releaseNode applies nodemark.Release with the node's resourceVersion as
// a precondition: a node changed since it was read (the controller
// cordoning it again) fails with a conflict rather than being overwritten.
func releaseNode(ctx context.Context, c client.Client, n *corev1.Node) error {
	orig := n.DeepCopy()
	if !nodemark.Release(n) {
		return nil
	}
	if err := c.Patch(ctx, n, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("releasing node %s: %w", n.Name, err)
	}
	return nil
}
