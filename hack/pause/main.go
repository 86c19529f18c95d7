// Command pause is the sandbox ("pause") container of the one-node cluster
// (hack/node-cluster.sh): it holds a pod's namespaces and does nothing
// else. The upstream image cannot be pulled here, so the cluster builds this
// static binary and, with --write-image, the binary writes itself into an
// OCI image archive that containerd imports: no image builder is needed.
//
// As PID 1 of the sandbox it reaps orphans (a pod may share its PID
// namespace) and exits on SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	out := flag.String("write-image", "", "write an OCI image archive of this binary to `FILE` and exit")
	name := flag.String("name", "registry.k8s.io/pause:3.10", "image `reference` for --write-image")
	flag.Parse()
	if *out != "" {
		if err := writeImage(*out, *name); err != nil {
			fmt.Fprintf(os.Stderr, "pause: writing image %s: %v\n", *out, err)
			os.Exit(1)
		}
		return
	}
	pause()
}

func pause() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
