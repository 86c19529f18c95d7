//go:build integration

package remediation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
)

// The controller publishes each signed head in its namespace's ConfigMap
// and refuses to replace it with a head of a store that was rewritten
// while the ConfigMap kept the old one.
func TestAuditHeadConfigMap(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{})
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gpuheal"}}); err != nil {
		t.Fatal(err)
	}
	skey, vkey, _ := audit.GenerateKey()
	dir := t.TempDir()
	for name, v := range map[string]string{v1alpha1.AuditSignerKeyKey: skey + "\n", v1alpha1.AuditVerifierKeyKey: vkey + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	signer, verifier, gotV, err := loadSigningKey(dir)
	if err != nil || gotV != vkey {
		t.Fatalf("loadSigningKey = %q, %v", gotV, err)
	}
	key := types.NamespacedName{Namespace: "gpuheal", Name: v1alpha1.AuditHeadConfigMap}
	pub := &configMapHeads{reader: env.Client, writer: env.Client, key: key, verifier: verifier, vkey: vkey}
	published := func() audit.TreeHead {
		t.Helper()
		var cm corev1.ConfigMap
		if err := env.Client.Get(ctx, key, &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data[v1alpha1.AuditVerifierKeyKey] != vkey {
			t.Errorf("ConfigMap verifier key %q", cm.Data[v1alpha1.AuditVerifierKeyKey])
		}
		h, err := audit.OpenHead([]byte(cm.Data[v1alpha1.AuditHeadKey]), verifier)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	store := audit.NewMemory()
	write := func(s *audit.Memory, keys ...string) {
		for _, k := range keys {
			if err := s.Write(ctx, audit.Record{Key: k, Kind: audit.Held}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(store, "a", "b", "c")
	n, err := audit.NewNotary(ctx, store, audit.NotaryOptions{Signer: signer, Publishers: []audit.Publisher{pub}})
	if err != nil {
		t.Fatal(err)
	}
	if h := published(); h.Size != 3 {
		t.Fatalf("published size %d, want 3", h.Size)
	}
	write(store, "d", "e")
	if err := n.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if h := published(); h.Size != 5 {
		t.Fatalf("published size %d, want 5", h.Size)
	}

	// A controller restarted over a store rewritten meanwhile.
	rewritten := audit.NewMemory()
	write(rewritten, "a", "b", "x", "d", "e", "f")
	n2, err := audit.NewNotary(ctx, rewritten, audit.NotaryOptions{Signer: signer, Publishers: []audit.Publisher{pub}})
	if err != nil {
		t.Fatal(err) // the tree is fine; publishing is what is refused
	}
	write(rewritten, "g")
	err = n2.Sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "refusing to replace the head in ConfigMap gpuheal/gpuheal-audit-head") ||
		!strings.Contains(err.Error(), "a record at or before seq 5 was rewritten") {
		t.Fatalf("Sync over a rewritten store: %v", err)
	}
	if h := published(); h.Size != 5 {
		t.Fatalf("published size %d after a rewrite, want the old 5 kept", h.Size)
	}
}
