package testenv

import (
	"context"
	"fmt"

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
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: e.Client.Scheme(), Mapper: e.Client.RESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("client for user %s: %w", user, err)
	}
	return c, nil
}
