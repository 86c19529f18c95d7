// Command gpuheal-agent runs on every GPU node: it reads the GPUs, the
// kernel log and the host, and serves what it finds as metrics.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/gpuheal/gpuheal/internal/agent"
	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/logging"
	"github.com/gpuheal/gpuheal/internal/simfleet"
)

// exitNoGPU is the documented exit code when no GPU (and no sim) is found,
// so a DaemonSet landing on a GPU-less node is told apart from a crash.
const exitNoGPU = 3

func main() {
	opts, logOpts, err := parseOptions(os.Args[1:], os.Stderr)
	var check *checkConfigRequest
	if errors.As(err, &check) {
		if err := analyzer.CheckFile(check.path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s: valid\n", check.path)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpuheal-agent:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, opts, logOpts)
	stop()
	switch {
	case errors.Is(err, agent.ErrNoGPU):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(exitNoGPU)
	case err != nil:
		fmt.Fprintln(os.Stderr, "gpuheal-agent:", err)
		os.Exit(1)
	}
}

// defaultGCPercent trades a little CPU for memory, as a DaemonSet on every
// GPU node should: the agent's live heap is ~3 MB and it allocates ~2 MB
// per collection, so at Go's default of 100 the heap swings to twice its
// live size. At 25 its RSS is ~3 MiB lower for ~0.1% more of a core
// (docs/benchmarks.md, agent footprint).
const defaultGCPercent = 25

func run(ctx context.Context, opts *options, logOpts logging.Options) error {
	log, err := logging.Setup(os.Stderr, logOpts)
	if err != nil {
		return err
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(opts.agent.GCPercent)
	}
	if opts.fleet.Enabled {
		return simfleet.Run(ctx, opts.fleet, opts.agent, log)
	}
	deps, err := agent.NewDeps(&opts.agent)
	if err != nil {
		return err
	}
	return agent.Run(ctx, &opts.agent, deps, os.Stdout, log)
}
