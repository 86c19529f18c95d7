package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
)

func newDevCommand(out io.Writer) *cobra.Command {
	dev := &cobra.Command{
		Use:   "dev",
		Short: "Developer tools: a local control plane with a fleet of fake GPU nodes",
	}
	dev.AddCommand(newDevClusterCommand(out))
	return dev
}

type devClusterOptions struct {
	nodes   int
	prefix  string
	binDir  string
	workDir string
	verbose bool
}

func newDevClusterCommand(out io.Writer) *cobra.Command {
	o := &devClusterOptions{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run kube-apiserver + etcd + kwok with N fake GPU nodes until Ctrl-C",
		Long: `Runs the same real control plane the tests use (kube-apiserver and etcd built
from source by hack/build-controlplane.sh) plus kwok, creates N fake 8-GPU
nodes, prints a kubeconfig path, and stops everything cleanly on Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.nodes < 0 {
				return fmt.Errorf("--nodes %d: must be 0 or more", o.nodes)
			}
			return runDevCluster(cmd.Context(), out, o)
		},
	}
	cmd.Flags().IntVar(&o.nodes, "nodes", 16, "number of fake GPU nodes")
	cmd.Flags().StringVar(&o.prefix, "node-prefix", "gpu-node", "node name prefix")
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "", "directory with kube-apiserver, etcd and kwok (default: $GPUHEAL_BIN_DIR or <repo>/bin)")
	cmd.Flags().StringVar(&o.workDir, "work-dir", "", "where to write the kubeconfig (default: a temporary directory removed on exit)")
	cmd.Flags().BoolVar(&o.verbose, "verbose", false, "show the control plane's own logs")
	return cmd
}

func runDevCluster(ctx context.Context, out io.Writer, o *devClusterOptions) error {
	log := logger()
	var procOut io.Writer
	if o.verbose {
		procOut = os.Stderr
	}
	start := time.Now()
	log.Info("starting control plane", "kwok", true)
	env, err := testenv.Start(ctx, testenv.Options{BinDir: o.binDir, Kwok: true, WorkDir: o.workDir, Output: procOut})
	if err != nil {
		return err
	}
	defer func() {
		log.Info("stopping control plane")
		if err := env.Stop(); err != nil {
			log.Error("stopping control plane", "err", err)
		}
	}()
	log.Info("control plane ready", "after", time.Since(start).Round(time.Millisecond))

	names, err := testenv.CreateGPUNodes(ctx, env.Client, o.prefix, o.nodes)
	if err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := testenv.WaitNodesReady(waitCtx, env.Client, names); err != nil {
		return err
	}
	log.Info("fake GPU nodes ready", "nodes", len(names), "after", time.Since(start).Round(time.Millisecond))

	fmt.Fprintf(out, "kubeconfig: %s\n", env.Kubeconfig)
	fmt.Fprintf(out, "try:        kubectl --kubeconfig %s get nodes -L %s,%s\n", env.Kubeconfig, gpuhealv1.LabelNvidiaGPUProduct, corev1.LabelTopologyZone)
	fmt.Fprintln(out, "Ctrl-C stops the cluster.")
	<-ctx.Done()
	return nil
}
