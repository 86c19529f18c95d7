package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/mod/sumdb/note"
	"k8s.io/client-go/rest"

	"github.com/gpuheal/gpuheal/internal/audit"
	"github.com/gpuheal/gpuheal/internal/audit/jsonl"
	"github.com/gpuheal/gpuheal/internal/audit/sqlite"
	"github.com/gpuheal/gpuheal/internal/auditapi"
)

// Exit status of audit verify, in diagnose's convention: 2 for the bad
// outcome (here a broken chain), 4 for a log that could not be read.
const (
	exitChainBroken = 2
	exitUnreadable  = 4
)

// auditSourceOptions says where incidents and audit read the audit log.
type auditSourceOptions struct {
	kube *cluster
	// namespace is -n, read when the command runs (kubectl's flag, whose
	// default here is the controller's namespace, not the context's).
	namespace     string
	service       string
	port          string
	controllerURL string
	// controllerCA and controllerInsecure check the certificate of an
	// https --controller-url (the controller's own, not the API server's).
	controllerCA       string
	controllerInsecure bool
	dbPath             string
	jsonlPath          string
}

func (o *auditSourceOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.service, "service", auditapi.DefaultService, "the controller's Service, reached through the API server's service proxy")
	fs.StringVar(&o.port, "service-port", auditapi.DefaultPort, "name or number of the Service's metrics port")
	fs.StringVar(&o.controllerURL, "controller-url", "", "talk to the controller directly (a port-forward: https://localhost:8080) with the kubeconfig's token, instead of through the API server")
	fs.StringVar(&o.controllerCA, "controller-ca-file", "", "with an https --controller-url: the CA of the controller's serving certificate")
	fs.BoolVar(&o.controllerInsecure, "controller-insecure-skip-tls-verify", false, "with an https --controller-url: do not check the controller's certificate (its default one is self-signed)")
	o.addFileFlags(fs)
}

// addFileFlags adds only the offline sources, for commands that read a
// copy of the log and never the cluster.
func (o *auditSourceOptions) addFileFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.dbPath, "audit-db", "", "read a SQLite audit file offline (a copy, or the live file: it is opened read-only)")
	fs.StringVar(&o.jsonlPath, "audit-jsonl", "", "read a JSON lines audit file offline (a JSONL sink's file, or an export)")
}

// resolve reads -n of cmd (the controller's namespace when not given);
// call it before open.
func (o *auditSourceOptions) resolve(cmd *cobra.Command) {
	o.namespace = auditapi.DefaultNamespace
	if o.kube != nil {
		o.namespace = o.kube.namespace(cmd, auditapi.DefaultNamespace)
	}
}

// open returns the reader the flags choose and a function to release it.
func (o *auditSourceOptions) open(ctx context.Context) (audit.Reader, func(), error) {
	set := 0
	for _, v := range []string{o.controllerURL, o.dbPath, o.jsonlPath} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return nil, nil, errors.New("give at most one of --controller-url, --audit-db and --audit-jsonl")
	}
	noop := func() {}
	switch {
	case o.dbPath != "":
		s, err := sqlite.Open(ctx, o.dbPath, sqlite.Options{ReadOnly: true})
		if err != nil {
			return nil, nil, err
		}
		return s, func() { _ = s.Close() }, nil
	case o.jsonlPath != "":
		if _, err := os.Stat(o.jsonlPath); err != nil {
			return nil, nil, fmt.Errorf("audit file: %w", err)
		}
		return jsonlFile(o.jsonlPath), noop, nil
	case o.controllerURL != "":
		hc, err := o.controllerClient()
		if err != nil {
			return nil, nil, err
		}
		c, err := auditapi.NewClient(o.controllerURL, hc)
		return c, noop, err
	}
	if o.kube == nil {
		return nil, nil, errors.New("give --audit-db or --audit-jsonl")
	}
	cfg, err := o.kube.restConfig()
	if err != nil {
		return nil, nil, err
	}
	c, err := auditapi.NewServiceProxyClient(cfg, auditapi.Service{Namespace: o.namespace, Name: o.service, Port: o.port})
	return c, noop, err
}

// controllerClient sends the kubeconfig's credentials to an https
// controller, which authenticates them with a TokenReview (a client
// certificate is not enough: use --token), and checks the controller's
// certificate instead of the API server's. Plain http gets no credentials.
func (o *auditSourceOptions) controllerClient() (*http.Client, error) {
	if !strings.HasPrefix(o.controllerURL, "https://") || o.kube == nil {
		return nil, nil
	}
	cfg, err := o.kube.restConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.TLSClientConfig = rest.TLSClientConfig{CAFile: o.controllerCA, Insecure: o.controllerInsecure}
	cfg.Timeout = 0 // the export streams; the command's context bounds it
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building an HTTP client for %s: %w", o.controllerURL, err)
	}
	return hc, nil
}

// jsonlFile reads a JSON lines audit file without opening it for writing
// (jsonl.OpenFile would create it, and refuses a broken one, which verify
// must report instead).
type jsonlFile string

func (p jsonlFile) Query(_ context.Context, f audit.Filter) ([]audit.Record, error) {
	r, err := os.Open(string(p))
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	out, err := jsonl.Query(r, f)
	if err != nil {
		return nil, fmt.Errorf("audit file %s: %w", p, err)
	}
	return out, nil
}

func (p jsonlFile) Verify(context.Context) (audit.Report, error) {
	r, err := os.Open(string(p))
	if err != nil {
		return audit.Report{}, err
	}
	defer func() { _ = r.Close() }()
	return jsonl.Verify(r)
}

func (p jsonlFile) Export(_ context.Context, w io.Writer) error {
	r, err := os.Open(string(p))
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	_, err = io.Copy(w, r)
	return err
}

func newAuditCommand(out io.Writer, k *cluster) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Verify or export the controller's audit log",
	}
	cmd.AddCommand(newAuditVerifyCommand(out, k), newAuditExportCommand(out, k), newAuditKeygenCommand(out))
	return cmd
}

// verifyReport is audit verify's JSON and YAML.
type verifyReport struct {
	OK       bool         `json:"ok"`
	Records  uint64       `json:"records"`
	HeadSeq  uint64       `json:"headSeq"`
	HeadHash string       `json:"headHash"`
	FirstBad *verifyBreak `json:"firstBad,omitempty"`
	// SinceHead is set with --since-head: the signed head checked and the
	// log's tree head now, or why the log does not extend it.
	SinceHead *sinceHeadReport `json:"sinceHead,omitempty"`
}

type sinceHeadReport struct {
	OK       bool   `json:"ok"`
	TreeSize int64  `json:"treeSize,omitempty"`
	TreeHash string `json:"treeHash,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

type verifyBreak struct {
	Seq     uint64 `json:"seq"`
	Key     string `json:"key,omitempty"`
	Problem string `json:"problem"`
}

func verifyReportOf(rep audit.Report) verifyReport {
	v := verifyReport{OK: rep.OK, Records: rep.Records, HeadSeq: rep.Head.Seq, HeadHash: rep.Head.Hash}
	if b := rep.FirstBad; b != nil {
		v.FirstBad = &verifyBreak{Seq: b.Seq, Key: b.Key, Problem: b.Problem}
	}
	return v
}

func newAuditVerifyCommand(out io.Writer, k *cluster) *cobra.Command {
	o := &auditSourceOptions{kube: k}
	var p *printer
	var sinceHead, key string
	cmd := &cobra.Command{
		Use:   "verify [--since-head FILE|- --key KEY] [-o table|json|yaml]",
		Short: "Check the audit log's hash chain: no record removed, reordered or edited",
		Long: `Walks the audit log's hash chain and prints OK with the record count and the
head (keep a copy of the head elsewhere: a rewritten chain has another), or the
first bad record with its seq, key and what is wrong with it.

By default it asks the controller, through the API server's service proxy;
--controller-url, --audit-db or --audit-jsonl read elsewhere.

With --since-head (a signed tree head saved earlier, for example from the
gpuheal-audit-head ConfigMap) and --key (the verifier key), it also rebuilds
the Merkle tree from every record and fails unless the log extends that
head: records cut from the end, a record rewritten (even with the chain
recomputed), first records dropped, or a wiped store.

Exit status: 0 the log holds, 2 it is broken or does not extend the head,
4 the log or the head could not be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.resolve(cmd)
			r, closeFn, err := o.open(cmd.Context())
			if err != nil {
				return &ExitError{Code: exitUnreadable, Err: err}
			}
			defer closeFn()
			var signed []byte
			var verifier note.Verifier
			if sinceHead != "" {
				if signed, verifier, err = readSinceHead(cmd.InOrStdin(), sinceHead, key); err != nil {
					return &ExitError{Code: exitUnreadable, Err: err}
				}
			}
			rep, err := r.Verify(cmd.Context())
			if err != nil {
				return &ExitError{Code: exitUnreadable, Err: err}
			}
			vr := verifyReportOf(rep)
			if signed != nil {
				head, err := audit.VerifySince(cmd.Context(), r, signed, verifier)
				var since *audit.SinceHeadError
				switch {
				case errors.As(err, &since):
					vr.SinceHead = &sinceHeadReport{Problem: err.Error()}
				case err != nil:
					return &ExitError{Code: exitUnreadable, Err: err}
				default:
					vr.SinceHead = &sinceHeadReport{OK: true, TreeSize: head.Size, TreeHash: head.Hash.String()}
				}
			}
			err = p.print(out, vr, func(w io.Writer, _ bool) error {
				_, err := fmt.Fprintln(w, rep.String())
				if sh := vr.SinceHead; err == nil && sh != nil {
					if sh.OK {
						_, err = fmt.Fprintf(w, "OK: the log extends the signed head; tree size %d hash %s\n", sh.TreeSize, sh.TreeHash)
					} else {
						_, err = fmt.Fprintf(w, "NOT APPEND-ONLY: %s\n", sh.Problem)
					}
				}
				return err
			})
			if err != nil {
				return err
			}
			if !rep.OK || (vr.SinceHead != nil && !vr.SinceHead.OK) {
				return &ExitError{Code: exitChainBroken, Err: errSilent}
			}
			return nil
		},
	}
	p = addPrinter(cmd, outTable, outJSON, outYAML)
	o.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&sinceHead, "since-head", "", "a signed tree head saved earlier (a file, or - for stdin): fail unless the log extends it")
	cmd.Flags().StringVar(&key, "key", os.Getenv("GPUHEAL_AUDIT_KEY"), "the audit verifier key (public), or a file holding it; needed with --since-head")
	return cmd
}

// readSinceHead reads the signed head from path (- for stdin) and the
// verifier key, which is the key itself or a file holding it.
func readSinceHead(stdin io.Reader, path, key string) ([]byte, note.Verifier, error) {
	if key == "" {
		return nil, nil, errors.New("--since-head needs --key (or $GPUHEAL_AUDIT_KEY): the verifier key printed by gpuheal audit keygen; " +
			"take it from your own copy, not from the cluster whose log you check")
	}
	if !strings.Contains(key, "+") {
		b, err := os.ReadFile(key)
		if err != nil {
			return nil, nil, fmt.Errorf("--key: %w", err)
		}
		key = string(b)
	}
	v, err := audit.NewVerifier(key)
	if err != nil {
		return nil, nil, fmt.Errorf("--key: %w", err)
	}
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, fmt.Errorf("--since-head: %w", err)
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("--since-head %s: %w", path, err)
	}
	return b, v, nil
}

func newAuditKeygenCommand(out io.Writer) *cobra.Command {
	var secret, namespace string
	cmd := &cobra.Command{
		Use:   "keygen [--secret NAME] [-n NAMESPACE]",
		Short: "Make the ed25519 key that signs the audit log's tree heads, as a Secret manifest",
		Long: `Prints a Secret holding a new signing key (signer-key) and its public half
(verifier-key). Apply it before installing the chart (kubectl apply -f), and
keep the verifier key elsewhere too: gpuheal audit verify --since-head needs it.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			skey, vkey, err := audit.GenerateKey()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, `# verifier key (public; keep a copy outside the cluster): %s
apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: %s
type: Opaque
stringData:
  signer-key: %s
  verifier-key: %s
`, vkey, secret, namespace, skey, vkey)
			return err
		},
	}
	cmd.Flags().StringVar(&secret, "secret", "gpuheal-audit-signing-key", "name of the Secret")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", auditapi.DefaultNamespace, "namespace of the Secret")
	return cmd
}

func newAuditExportCommand(out io.Writer, k *cluster) *cobra.Command {
	o := &auditSourceOptions{kube: k}
	var format string
	cmd := &cobra.Command{
		Use:   "export [--format jsonl]",
		Short: "Write every audit record, oldest first, as JSON lines to stdout",
		Long: `Writes the whole audit log, oldest first, one JSON object per line (the format
in docs/audit.md). The output verifies on its own: gpuheal audit verify --audit-jsonl FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "jsonl" {
				return fmt.Errorf("--format %q: want jsonl", format)
			}
			o.resolve(cmd)
			r, closeFn, err := o.open(cmd.Context())
			if err != nil {
				return &ExitError{Code: exitUnreadable, Err: err}
			}
			defer closeFn()
			if err := r.Export(cmd.Context(), out); err != nil {
				return &ExitError{Code: exitUnreadable, Err: fmt.Errorf("exporting the audit log: %w", err)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "jsonl", "output format: jsonl")
	o.addFlags(cmd.Flags())
	return cmd
}
