package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/flagenv"
	"github.com/gpuheal/gpuheal/internal/logging"
	"github.com/gpuheal/gpuheal/internal/remediation"
	"github.com/gpuheal/gpuheal/internal/score"
)

type options struct {
	log       logging.Options
	run       remediation.RunOptions
	gcPercent int
	// release runs remediation.Release once instead of the controller.
	release     bool
	releaseOpts remediation.ReleaseOptions
}

// defaultGCPercent: the controller's live heap is mostly its cache of GPU
// nodes (~25 KiB each on a 5,000-node fleet); at Go's default of 100 the
// heap swings to twice that between collections. At 50 the peak RSS of the
// fleet benchmark drops by tens of MiB for a few milliseconds of GC a
// second (docs/benchmarks.md).
const defaultGCPercent = 50

// parseOptions reads flags, then GPUHEAL_* variables for flags not given,
// and validates the result once.
func parseOptions(args []string) (*options, error) {
	o := &options{}
	m, c, p := &o.run.Manager, &o.run.Controllers, &o.run.Providers
	var providers string
	fs := pflag.NewFlagSet("gpuheal-controller", pflag.ContinueOnError)
	fs.StringVar(&o.log.Format, "log-format", "json", "log format: json or text")
	fs.StringVar(&o.log.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&m.Kubeconfig, "kubeconfig", "", "kubeconfig path (default: in-cluster, then $KUBECONFIG)")
	fs.StringVar(&m.MetricsAddress, "metrics-address", ":8080", "address of the Prometheus metrics endpoint")
	fs.BoolVar(&m.SecureMetrics, "metrics-secure", true, "serve metrics, the audit API and the status page over TLS, only to callers the API server authenticates and authorizes (get on the path as a nonResourceURL); false serves plain HTTP to anyone who reaches the port")
	fs.StringVar(&m.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for --metrics-secure (default: a self-signed certificate)")
	fs.StringVar(&m.HealthAddress, "health-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&m.LeaderElection, "leader-elect", true, "elect a leader through a Lease so that only one replica acts")
	fs.StringVar(&m.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader Lease (default: the pod's namespace)")
	fs.StringVar(&m.LeaderElectionID, "leader-election-id", "gpuheal-controller", "name of the leader Lease")
	fs.DurationVar(&m.GracefulShutdown, "graceful-shutdown-timeout", 30*time.Second, "how long running steps may take to finish on shutdown")
	fs.Float32Var(&m.QPS, "kube-api-qps", 100, "API requests per second the controller may make")
	fs.IntVar(&m.Burst, "kube-api-burst", 200, "API request burst the controller may make")
	fs.StringVar(&m.NodeSelector, "node-selector", remediation.DefaultNodeSelector, "label selector of the nodes to watch (only these are cached)")
	fs.DurationVar(&c.Poll, "poll-interval", remediation.DefaultPoll, "how often waiting steps (drains, verification, held incidents) look again")
	fs.DurationVar(&c.IncidentRetention, "incident-retention", remediation.DefaultIncidentRetention, "finished NodeRemediations are deleted this long after they ended (their audit records stay)")
	fs.IntVar(&c.Workers, "workers", 32, "concurrent reconciles per controller (incidents mostly wait on API calls)")
	fs.StringVar(&providers, "providers", "aws,karpenter,clusterapi,none", "providers policies may use; kwok (a simulated cloud that deletes and creates Node objects) only for tests and the demo")
	fs.DurationVar(&p.Kwok.BootDelay, "kwok-boot-delay", 90*time.Second, "kwok provider: how long a replacement node takes to boot")
	fs.DurationVar(&p.Kwok.RebootDelay, "kwok-reboot-delay", 30*time.Second, "kwok provider: how long a reboot keeps a node NotReady")
	fs.StringVar(&p.Kwok.ChaosFile, "kwok-chaos-file", "", "kwok provider: a file read before every call; \"fail\" or \"throttle\" make calls fail (soak tests)")
	fs.StringVar(&p.AWSEC2Endpoint, "aws-ec2-endpoint", "", "aws provider: EC2 endpoint URL (default: the region's public endpoint)")
	fs.StringVar(&p.AWSAutoScalingEndpoint, "aws-autoscaling-endpoint", "", "aws provider: Auto Scaling endpoint URL (default: the region's public endpoint)")
	fs.StringVar(&p.AWSSTSEndpoint, "aws-sts-endpoint", "", "aws provider: STS endpoint URL, asked only by the preflight (default: the region's endpoint)")
	fs.DurationVar(&c.PreflightEvery, "preflight-interval", remediation.DefaultPreflightEvery, "how often each policy's provider proves it can act (jittered; also at start and when a policy changes): the policy's ProviderReady condition")
	fs.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, "garbage collector target percentage, as GOGC (which wins when set)")
	a := &o.run.Audit
	fs.StringVar(&a.Sink, "audit-sink", "sqlite", "where the audit log goes: sqlite, jsonl, dynamodb or none")
	fs.StringVar(&a.SQLitePath, "audit-sqlite-path", "/var/lib/gpuheal/audit.db", "sqlite audit database, on a volume that outlives the pod")
	fs.StringVar(&a.JSONLPath, "audit-jsonl-path", "-", "jsonl audit file, or - for stdout")
	fs.StringVar(&a.DynamoDBTable, "audit-dynamodb-table", "", "dynamodb audit table (docs/audit.md)")
	fs.StringVar(&a.DynamoDBEndpoint, "audit-dynamodb-endpoint", "", "dynamodb endpoint URL (default: the region's)")
	fs.StringVar(&a.SigningKeyDir, "audit-signing-key-dir", "", "directory of the mounted audit signing key Secret (signer-key, verifier-key); empty: tree heads are not signed")
	fs.IntVar(&a.Buffer, "audit-buffer", 10000, "audit records kept in memory while the store fails; beyond, losses are counted")
	o.run.Score = score.DefaultConfig()
	sc := &o.run.Score
	fs.DurationVar(&sc.HalfLife, "score-half-life", sc.HalfLife, "health score: how fast an incident's weight halves")
	fs.Float64Var(&sc.GoldMin, "score-gold-min", sc.GoldMin, "health score: lowest score of the gold tier")
	fs.Float64Var(&sc.SilverMin, "score-silver-min", sc.SilverMin, "health score: lowest score of the silver tier")
	fs.DurationVar(&c.ScoreEvery, "score-interval", time.Minute, "how often health scores are published on the nodes")
	fs.BoolVar(&c.ProtectGold, "protect-gold-from-scale-in", false, "keep gold-tier nodes out of scale-in through the node's provider (aws: Auto Scaling instance protection), so a shrinking group removes the least trusted first")
	fs.BoolVar(&c.TaintBronze, "score-taint-bronze", true, "keep a PreferNoSchedule taint gpuheal.io/health-tier=bronze on bronze-tier nodes, so that new pods go to healthier nodes when they can (docs/health-score.md); false also removes it where it was left")
	fs.BoolVar(&o.run.StatusPage, "status-page", false, "serve a read-only web page of the fleet at /status/ on the metrics address; open it through the API server's service proxy or a port-forward (docs/status-page.md)")
	fs.StringVar(&c.Self.Name, "pod-name", "", "the controller's own pod, which drains leave in place (the chart sets it from the downward API)")
	fs.StringVar(&c.Self.Namespace, "pod-namespace", "", "namespace of --pod-name")
	ck := &c.Checks
	var imgDCGM, imgNCCL, imgNVB string
	fs.StringVar(&ck.Namespace, "check-namespace", "", "namespace of the health gate's check Jobs (default: --pod-namespace, else $POD_NAMESPACE, else default)")
	fs.StringVar(&imgDCGM, "check-image-dcgm", remediation.DefaultCheckImageDCGM, "image of DCGM checks that name none (run as: sh -c \"nv-hostengine && exec dcgmi diag -r LEVEL -j\")")
	fs.StringVar(&imgNCCL, "check-image-nccl", remediation.DefaultCheckImageNCCL, "image of NCCL checks that name none (run as: all_reduce_perf -b 8 -e 8G -f 2 -g GPUS)")
	fs.StringVar(&imgNVB, "check-image-nvbandwidth", "", "image of NVBandwidth checks that name none (run as: nvbandwidth -t device_to_device_memcpy_read_ce); empty: such checks end as Error")
	fs.StringVar(&ck.JobsManagedBy, "check-jobs-managed-by", "", "spec.managedBy of the check Jobs, for a controller other than Kubernetes' own Job controller to run them (a simulated fleet); empty: the built-in one")
	devicePlugins := fs.StringArray("device-plugin-selector", remediation.DefaultDevicePluginSelectors, "label selector of NVIDIA's device plugin pods, restarted on a node after a GPU reset so that the plugin advertises the GPU again (repeat for several; --device-plugin-selector= alone: never restart)")
	var releaseController string
	fs.BoolVar(&o.release, "release", false, "instead of running: stop the controller (--release-controller), end open incidents and uncordon every node gpuheal cordoned, then exit (the chart's uninstall hook)")
	fs.StringVar(&releaseController, "release-controller", "", "with --release: the controller Deployment NAMESPACE/NAME to scale to zero first")
	fs.DurationVar(&o.releaseOpts.Timeout, "release-timeout", 2*time.Minute, "with --release: how long to wait for the controller's pods to end")
	flagenv.Usage(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := flagenv.Apply(fs, nil); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := logging.ParseLevel(o.log.Level); err != nil {
		return nil, err
	}
	if m.GracefulShutdown <= 0 {
		return nil, fmt.Errorf("--graceful-shutdown-timeout %v: must be positive", m.GracefulShutdown)
	}
	if o.gcPercent < 10 {
		return nil, fmt.Errorf("--gc-percent %d: must be at least 10", o.gcPercent)
	}
	if c.IncidentRetention <= 0 {
		return nil, fmt.Errorf("--incident-retention %v: must be positive", c.IncidentRetention)
	}
	if c.PreflightEvery <= 0 {
		return nil, fmt.Errorf("--preflight-interval %v: must be positive", c.PreflightEvery)
	}
	if c.Poll <= 0 || c.Workers <= 0 {
		return nil, fmt.Errorf("--poll-interval %v and --workers %d: must be positive", c.Poll, c.Workers)
	}
	if ck.Namespace == "" {
		ck.Namespace = c.Self.Namespace
	}
	ck.Images = map[gpuhealv1.CheckKind]string{gpuhealv1.CheckDCGM: imgDCGM, gpuhealv1.CheckNCCL: imgNCCL, gpuhealv1.CheckNVBandwidth: imgNVB}
	if err := ck.Validate(); err != nil {
		return nil, err
	}
	var specs []string
	for _, s := range *devicePlugins {
		if s != "" {
			specs = append(specs, s)
		}
	}
	sels, err := remediation.ParseDevicePluginSelectors(specs)
	if err != nil {
		return nil, fmt.Errorf("--device-plugin-selector: %w", err)
	}
	c.DevicePlugins = sels
	if releaseController != "" {
		ns, name, ok := strings.Cut(releaseController, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("--release-controller %q: want NAMESPACE/NAME", releaseController)
		}
		o.releaseOpts.Controller = types.NamespacedName{Namespace: ns, Name: name}
	}
	if p.Enabled, err = remediation.ParseProviders(providers); err != nil {
		return nil, fmt.Errorf("--providers: %w", err)
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("health score flags: %w", err)
	}
	return o, nil
}
