package testenv

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClientAs returns a client that acts as user (impersonated by the admin,
// in group system:authenticated) holding exactly rules, granted through a
// ClusterRole and ClusterRoleBinding named after the user: what a service
// account with a narrow role sees, for tests of permission checks.
func (e *Env) ClientAs(ctx context.Context, user string, rules []rbacv1.PolicyRule) (client.Client, error) {
	name := "test-user-" + user
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if err := e.Client.Create(ctx, role); err != nil {
		return nil, fmt.Errorf("creating ClusterRole %s: %w", name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if err := e.Client.Create(ctx, binding); err != nil {
		return nil, fmt.Errorf("creating ClusterRoleBinding %s: %w", name, err)
	}
	if err := e.awaitGrant(ctx, user, rules); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: e.Client.Scheme(), Mapper: e.Client.RESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("client for user %s: %w", user, err)
	}
	return c, nil
}

// awaitGrant polls until the API server's authorizer allows user every verb
// of rules: its RBAC rules come from an informer cache, so a binding just
// created may not be in force yet, and a test that checks rights at once
// would see the grant missing now and then.
func (e *Env) awaitGrant(ctx context.Context, user string, rules []rbacv1.PolicyRule) error {
	for _, rule := range rules {
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				for _, verb := range rule.Verbs {
					attrs := authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb}
					if err := e.awaitAllowed(ctx, user, attrs); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (e *Env) awaitAllowed(ctx context.Context, user string, attrs authorizationv1.ResourceAttributes) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: &attrs,
		}}
		if err := e.Client.Create(ctx, review); err != nil {
			return fmt.Errorf("asking whether %s may %s %s: %w", user, attrs.Verb, attrs.Resource, err)
		}
		if review.Status.Allowed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the grant of %s %s to %s never came into force: %w", attrs.Verb, attrs.Resource, user, ctx.Err())
		case <-tick.C:
		}
	}
}
