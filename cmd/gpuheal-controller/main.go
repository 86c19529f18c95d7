// Command gpuheal-controller runs the leader-elected remediation controller.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/gpuheal/gpuheal/internal/logging"
	"github.com/gpuheal/gpuheal/internal/remediation"
)

func main() {
	opts, err := parseOptions(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpuheal-controller:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, opts)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpuheal-controller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, opts *options) error {
	log, err := logging.Setup(os.Stderr, opts.log)
	if err != nil {
		return err
	}
	if opts.release {
		log.Info("releasing the nodes gpuheal holds", "controller", opts.releaseOpts.Controller.String())
		return remediation.RunRelease(ctx, opts.run.Manager.Kubeconfig, opts.releaseOpts)
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(opts.gcPercent)
	}
	log.Info("starting gpuheal-controller", "leaderElection", opts.run.Manager.LeaderElection, "providers", opts.run.Providers.Enabled,
		"statusPage", opts.run.StatusPage)
	return remediation.Run(ctx, opts.run)
}
