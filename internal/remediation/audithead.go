package remediation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"
	"golang.org/x/mod/sumdb/note"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// configMapHeads publishes each signed audit tree head in a ConfigMap of
// the controller's namespace: outside the store, so that whoever can
// rewrite the store (the volume, the DynamoDB table) cannot also rewrite
// the heads, and readable with kubectl by anyone allowed to get it.
type configMapHeads struct {
	reader   client.Reader // uncached: no ConfigMap informer for one object
	writer   client.Client
	key      types.NamespacedName
	verifier note.Verifier
	vkey     string
}

// PublishHead implements audit.Publisher. It replaces the published head
// only when the tree extends it; a head the tree does not extend (the
// store was truncated or rewritten while the ConfigMap kept its head), or
// one not signed by our key, is left in place and reported.
func (p *configMapHeads) PublishHead(ctx context.Context, signed []byte, _ audit.TreeHead, tree *audit.Tree) error {
	var cm corev1.ConfigMap
	err := p.reader.Get(ctx, p.key, &cm)
	if apierrors.IsNotFound(err) {
		cm = corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.key.Namespace, Name: p.key.Name},
			Data:       map[string]string{v1alpha1.AuditHeadKey: string(signed), v1alpha1.AuditVerifierKeyKey: p.vkey},
		}
		if err := p.writer.Create(ctx, &cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", p.key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s: %w", p.key, err)
	}
	if old := cm.Data[v1alpha1.AuditHeadKey]; old != "" {
		prev, err := audit.OpenHead([]byte(old), p.verifier)
		if err == nil {
			err = tree.CheckHead(prev)
		}
		if err != nil {
			return fmt.Errorf("refusing to replace the head in ConfigMap %s (delete it to accept the log as it is now): %w", p.key, err)
		}
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[v1alpha1.AuditHeadKey] = string(signed)
	cm.Data[v1alpha1.AuditVerifierKeyKey] = p.vkey
	// Update carries the resourceVersion read: a concurrent writer makes
	// it fail, and the next write retries from a fresh read.
	if err := p.writer.Update(ctx, &cm); err != nil {
		return fmt.Errorf("updating ConfigMap %s: %w", p.key, err)
	}
	return nil
}

// loadSigningKey reads the signing key Secret as mounted: a directory
// with the files signer-key and verifier-key.
func loadSigningKey(dir string) (note.Signer, note.Verifier, string, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			return "", fmt.Errorf("audit signing key: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	skey, err := read(v1alpha1.AuditSignerKeyKey)
	if err != nil {
		return nil, nil, "", err
	}
	vkey, err := read(v1alpha1.AuditVerifierKeyKey)
	if err != nil {
		return nil, nil, "", err
	}
	s, err := audit.NewSigner(skey)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s/%s: %w", dir, v1alpha1.AuditSignerKeyKey, err)
	}
	v, err := audit.NewVerifier(vkey)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s/%s: %w", dir, v1alpha1.AuditVerifierKeyKey, err)
	}
	if s.Name() != v.Name() || s.KeyHash() != v.KeyHash() {
		return nil, nil, "", fmt.Errorf("audit signing key in %s: %s and %s are not a pair", dir, v1alpha1.AuditSignerKeyKey, v1alpha1.AuditVerifierKeyKey)
	}
	return s, v, vkey, nil
}

// notaryRunnable builds the Notary when this replica becomes leader (it
// reads and checks the whole store once) and hands it to the audit
// writer's AfterWrite; until then, and on replicas that never lead, writes
// sign nothing.
type notaryRunnable struct {
	src    audit.Tailer
	opts   audit.NotaryOptions
	target *atomic.Pointer[audit.Notary]
	log    logr.Logger
}

// Start implements manager.Runnable (leader only: the default).
func (n *notaryRunnable) Start(ctx context.Context) error {
	no, err := audit.NewNotary(ctx, n.src, n.opts)
	if err != nil {
		// No head is signed over a log that does not verify, or that the
		// published head says was rewritten; remediation goes on.
		n.log.Error(err, "Audit tree heads are not signed")
		<-ctx.Done()
		return nil
	}
	n.target.Store(no)
	<-ctx.Done()
	return nil
}

// syncNotary is the audit writer's AfterWrite.
func syncNotary(target *atomic.Pointer[audit.Notary]) func(context.Context) error {
	return func(ctx context.Context) error {
		if no := target.Load(); no != nil {
			return no.Sync(ctx)
		}
		return nil
	}
}

// addNotary signs and publishes tree heads of aud's store once this
// replica leads: to the log always, and to the ConfigMap when the
// controller knows its namespace. Without a key it keeps the tree-size
// metric only. A key that does not parse is an error.
func addNotary(mgr interface {
	Add(manager.Runnable) error
	GetAPIReader() client.Reader
	GetClient() client.Client
}, aud *openedAudit, keyDir, namespace string, log logr.Logger) error {
	if aud.tailer == nil {
		return nil
	}
	opts := audit.NotaryOptions{Registerer: metrics.Registry, Logger: log}
	if keyDir != "" {
		s, v, vkey, err := loadSigningKey(keyDir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			log.Error(err, "Audit tree heads are not signed: no signing key; create the Secret with gpuheal audit keygen", "dir", keyDir)
		case err != nil:
			return err
		default:
			opts.Signer = s
			opts.Publishers = append(opts.Publishers, audit.LogPublisher{Logger: log})
			if namespace != "" {
				opts.Publishers = append(opts.Publishers, &configMapHeads{reader: mgr.GetAPIReader(), writer: mgr.GetClient(),
					key: types.NamespacedName{Namespace: namespace, Name: v1alpha1.AuditHeadConfigMap}, verifier: v, vkey: vkey})
			}
		}
	}
	return mgr.Add(&notaryRunnable{src: aud.tailer, opts: opts, target: aud.notary, log: log})
}
