# Sourced by hack/node-cluster.sh: the one-node cluster's PKI, made with
# openssl once per state directory. A CA; the API server's serving
# certificate; client certificates whose subjects are the identities
# Kubernetes' authorizers know (system:masters for the admin and the API
# server's kubelet client, system:node:<name> in system:nodes for the
# kubelet, so the Node authorizer and NodeRestriction apply to it); and the
# service-account signing key.

# sign NAME CN O EXT: a P-256 key and a certificate signed by the CA.
sign() {
  local name="$1" cn="$2" o="$3" ext="$4"
  [[ -f "$pki/$name.crt" ]] && return 0
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$pki/$name.key" -subj "/CN=$cn${o:+/O=$o}" -out "$pki/$name.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 365 -sha256 -extfile <(printf '%s\n' "$ext") -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr"
}

# kubeconfig FILE USER-CERT-NAME: a kubeconfig that authenticates with that certificate.
kubeconfig() {
  cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: node-cluster
  cluster:
    certificate-authority: $pki/ca.crt
    server: https://127.0.0.1:$api_port
users:
- name: $2
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: node-cluster
  context: {cluster: node-cluster, user: $2}
current-context: node-cluster
KUBECONFIG
}

make_pki() {
  mkdir -p "$pki"
  if [[ ! -f "$pki/ca.crt" ]]; then
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 -sha256 \
      -keyout "$pki/ca.key" -subj "/CN=gpuheal-node-cluster-ca" -out "$pki/ca.crt" 2>/dev/null
  fi
  local client="extendedKeyUsage=clientAuth"
  sign apiserver kube-apiserver "" "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$ip,IP:$service_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  sign admin admin system:masters "$client"
  sign apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "$client"
  sign kubelet "system:node:$node" system:nodes "$client"
  sign controller-manager system:kube-controller-manager "" "$client"
  sign scheduler system:kube-scheduler "" "$client"
  sign kube-proxy system:kube-proxy "" "$client"
  [[ -f "$pki/sa.key" ]] || openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  [[ -f "$pki/sa.pub" ]] || openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  kubeconfig "$dir/admin.kubeconfig" admin
  kubeconfig "$dir/kubelet.kubeconfig" kubelet
  kubeconfig "$dir/controller-manager.kubeconfig" controller-manager
  kubeconfig "$dir/scheduler.kubeconfig" scheduler
  kubeconfig "$dir/kube-proxy.kubeconfig" kube-proxy
}
