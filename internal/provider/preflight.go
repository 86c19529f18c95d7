package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// PreflightError is a failed preflight with the reason the policy's
// ProviderReady condition shows (v1alpha1.ReasonPermissionDenied, ...).
type PreflightError struct {
	Reason string
	Err    error
}

func (e *PreflightError) Error() string { return e.Err.Error() }
func (e *PreflightError) Unwrap() error { return e.Err }

// ReasonOf is the reason of a failed preflight: a PreflightError's, else
// v1alpha1.ReasonPreflightFailed.
func ReasonOf(err error) string {
	var pe *PreflightError
	if errors.As(err, &pe) && pe.Reason != "" {
		return pe.Reason
	}
	return v1alpha1.ReasonPreflightFailed
}

// Access is one thing a provider must be allowed to do in the API server.
type Access struct {
	Verb, Group, Resource string
	// Namespace: "" for cluster-scoped resources, or all namespaces.
	Namespace string
}

func (a Access) String() string {
	r := a.Resource
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", a.Verb, r, a.Namespace)
	}
	return a.Verb + " " + r
}

// CheckAccess asks the API server, with one SelfSubjectAccessReview per
// entry, whether the client's own identity may do each. Every one denied is
// named in a PreflightError with reason PermissionDenied; the message says
// what was allowed otherwise. Creating a SelfSubjectAccessReview needs no
// grant: every authenticated user may ask about itself.
func CheckAccess(ctx context.Context, c client.Client, who string, want []Access) (string, error) {
	var denied, allowed []string
	for _, a := range want {
		review := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authv1.ResourceAttributes{Verb: a.Verb, Group: a.Group, Resource: a.Resource, Namespace: a.Namespace},
		}}
		if err := c.Create(ctx, review); err != nil {
			return "", fmt.Errorf("%s: asking the API server whether it may %s: %w", who, a, err)
		}
		if review.Status.Allowed {
			allowed = append(allowed, a.String())
			continue
		}
		d := a.String()
		if r := review.Status.Reason; r != "" {
			d += " (" + r + ")"
		}
		denied = append(denied, d)
	}
	if len(denied) > 0 {
		return "", &PreflightError{Reason: v1alpha1.ReasonPermissionDenied,
			Err: fmt.Errorf("%s: the controller's service account may not %s", who, strings.Join(denied, ", "))}
	}
	return "allowed: " + strings.Join(allowed, ", "), nil
}

// CheckAccessAndList is the preflight of a provider that acts through
// another project's objects (Karpenter's NodeClaims, Cluster API's
// Machines): CheckAccess for want, then one List of gvk, limited to one
// object, to prove the API server serves it at all; project names what
// would ("Karpenter v1").
func CheckAccessAndList(ctx context.Context, c client.Client, who string, want []Access, gvk schema.GroupVersionKind, project string) (string, error) {
	msg, err := CheckAccess(ctx, c, who, want)
	if err != nil {
		return "", err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, client.Limit(1)); err != nil {
		if meta.IsNoMatchError(err) {
			return "", fmt.Errorf("%s: the API server serves no %s (is %s installed?): %w", who, gvk, project, err)
		}
		return "", fmt.Errorf("%s: listing %ss: %w", who, gvk.Kind, err)
	}
	return msg, nil
}
