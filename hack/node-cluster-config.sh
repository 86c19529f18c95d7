# Sourced by hack/node-cluster.sh: configuration of containerd, the CNI
# network, the kubelet and kube-proxy, each with the one setting this kind of
# machine needs and the reason next to it.

write_configs() {
  cat >"$dir/containerd/config.toml" <<TOML
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$ctr_sock"
[plugins."io.containerd.grpc.v1.cri"]
  # Built locally by hack/pause and imported; never pulled.
  sandbox_image = "$pause_image"
  # Root in a VM may lack CAP_SYS_RESOURCE: runc then cannot give the
  # sandbox the negative oom_score_adj the kubelet asks for.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # Matches the kubelet's cgroupDriver below.
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
TOML

  # bridge + host-local on the node's /24, portmap for hostPorts, and
  # firewall: a dockerd that manages iptables sets the FORWARD policy to
  # DROP (the one of `make images` does not), which would otherwise
  # drop pod traffic.
  cat >"$dir/cni/net.d/10-node-cluster.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "node-cluster",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$pod_cidr"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$dir/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "firewall"}
  ]
}
JSON

  cat >"$dir/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$ctr_sock
# The host is cgroup v1 (hybrid): kubelet >= 1.35 refuses it unless told.
failCgroupV1: false
# containerd 1.6 lacks the RuntimeConfig RPC that reports its driver.
cgroupDriver: cgroupfs
failSwapOn: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
healthzBindAddress: 127.0.0.1
# Container logs stay in the state directory, not the host's /var/log/pods.
podLogsDir: $dir/pod-logs
resolvConf: /etc/resolv.conf
serializeImagePulls: false
# A development disk may be fuller than the defaults allow; pods must not be
# evicted for it.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
YAML

  cat >"$dir/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $dir/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $cluster_cidr
hostnameOverride: $node
# A VM's root may not raise nf_conntrack_max; keep the host's value.
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
YAML
}
