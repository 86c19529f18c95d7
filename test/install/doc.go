// Package install installs the gpuheal chart, with the images `make images`
// builds, on a real one-node cluster (hack/node-cluster.sh: a real kubelet,
// containerd and kube-proxy) and checks what no render or dry run can: the
// agent's pod starts with its mounts, securityContext and probes and reads
// GPUs through a stand-in libnvidia-ml.so.1 mounted the way the chart mounts
// a driver; its bound token carries the node claim the admission policy
// checks; a fault on the node makes the controller cordon it and evict a real
// pod through the Eviction API while a PodDisruptionBudget holds; and upgrade
// and uninstall leave nothing behind.
//
// It needs root (the kubelet), so under CI it runs as root; elsewhere it
// skips unless run as root.
//
// Its tests are built only with -tags integration; `make test` runs them
// on their own, after everything else.
package install
