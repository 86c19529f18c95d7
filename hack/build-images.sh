#!/usr/bin/env bash
# `make images`: builds the agent, controller and CLI images from
# build/*.Dockerfile on locally made bases (hack/base-images.sh), offline
# but for the Go module proxy, checks that each one runs, and saves each as
# a tarball for `ctr -n k8s.io images import`. docs/images.md.
#
#   hack/build-images.sh [ARCH...]     ARCH: amd64, arm64 (default: the host's)
#
# Tags: the chart's image repositories (charts/gpuheal/values.yaml) at its
# appVersion (Chart.yaml), plus -ARCH; the CLI's repository is the agent's
# with the name gpuheal. The host architecture's images also get the plain
# tag, e.g. ghcr.io/gpuheal/gpuheal-agent:0.1.0; each tarball holds the plain
# tag, whatever its architecture:
#   bin/images/gpuheal-agent-0.1.0-amd64.tar        (and -controller, gpuheal)
#   bin/images/ARCH.txt                             "reference tarball" per image
#   bin/images/SHA256SUMS-ARCH                      the binaries and tarballs
#
# Starts dockerd when none answers (hack/dockerd.sh) and stops it again when
# done and no other build holds it, unless KEEP_DOCKERD=1 (then it stays up
# until hack/dockerd.sh stop). Environment: VERSION (stamped into the
# binaries; default `git describe`), SOURCE_DATE_EPOCH (mtime of the image's
# files; default the commit's time), DOCKER (default /usr/bin/docker, whose
# BuildKit is built in), IMAGES_NO_VERIFY=1 (skip the run checks).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${GPUHEAL_BIN_DIR:-$root/bin}/images"
export DOCKER="${DOCKER:-$(command -v /usr/bin/docker || command -v docker)}"
docker="$DOCKER"
go="${GO:-go}"
host_arch="$(dpkg --print-architecture 2>/dev/null || "$go" env GOARCH)"

step="checking the arguments"
t0=$SECONDS
acquired=0
on_exit() {
  local rc=$?
  if ((acquired)); then ./hack/dockerd.sh release $$ >/dev/null || true; fi
  if ((rc != 0)); then
    echo "" >&2
    echo "make images FAILED (exit $rc) while $step" >&2
    echo "  build logs: $out/logs/; dockerd's: ${GPUHEAL_BIN_DIR:-$root/bin}/dockerd/" >&2
  fi
  exit "$rc"
}
trap on_exit EXIT
die() { echo "build-images.sh: $*" >&2; exit 1; }
log() { printf '>> images [%3ds] %s\n' $((SECONDS - t0)) "$*"; }

arches=("$@")
((${#arches[@]})) || arches=("$host_arch")
for a in "${arches[@]}"; do
  case "$a" in amd64 | arm64) ;; *) die "unsupported architecture '$a' (amd64, arm64)" ;; esac
done

# --- what to build: names and tags from the chart (read, never copied) ---
step="reading charts/gpuheal/Chart.yaml and values.yaml"
app_version="$(awk '/^appVersion:/ {v = $2; gsub(/["'\'']/, "", v); print v; exit}' charts/gpuheal/Chart.yaml)"
[[ -n "$app_version" ]] || die "no appVersion in charts/gpuheal/Chart.yaml"
# repository: TOP.image.repository in values.yaml (TOP a top-level key).
chart_repo() {
  awk -v top="$1" '
    /^[^ #][^:]*:/ { cur = $1; sub(/:$/, "", cur); img = 0; next }
    cur == top && /^  image:/ { img = 1; next }
    cur == top && img && /^    repository:/ { print $2; exit }
    cur == top && /^  [^ ]/ { img = 0 }
  ' charts/gpuheal/values.yaml
}
agent_repo="$(chart_repo agent)"
controller_repo="$(chart_repo controller)"
[[ -n "$agent_repo" && -n "$controller_repo" ]] || die "no agent/controller image.repository in charts/gpuheal/values.yaml"
cli_repo="${agent_repo%/*}/gpuheal"

VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

# name dockerfile runtime-base(glibc|static) repository
images=(
  "gpuheal-agent build/gpuheal-agent.Dockerfile glibc $agent_repo"
  "gpuheal-controller build/gpuheal-controller.Dockerfile static $controller_repo"
  "gpuheal build/gpuheal.Dockerfile static $cli_repo"
)

# --- dockerd ---
step="starting dockerd (hack/dockerd.sh)"
if [[ "${KEEP_DOCKERD:-}" == 1 ]]; then ./hack/dockerd.sh start; fi
acquired=1
./hack/dockerd.sh acquire $$

mkdir -p "$out/logs"

# The Go environment of this machine, for the build stage (docs/images.md).
go_args=()
for v in GOPROXY GOSUMDB GONOSUMDB GOPRIVATE GOFLAGS; do
  go_args+=(--build-arg "$v=$("$go" env "$v")")
done

# build NAME DOCKERFILE BASE REPO ARCH: one image; its log in $out/logs.
build() {
  local name="$1" file="$2" base="$3" repo="$4" arch="$5"
  local runtime
  case "$base" in glibc) runtime="$RUNTIME_IMAGE" ;; static) runtime="$STATIC_IMAGE" ;; esac
  local tags=(-t "$repo:$app_version-$arch")
  [[ "$arch" == "$host_arch" ]] && tags+=(-t "$repo:$app_version")
  local t=$SECONDS
  if ! DOCKER_BUILDKIT=1 "$docker" build --progress=plain --network=host \
    --platform "linux/$arch" -f "$file" \
    --build-arg "BUILDER_IMAGE=$BUILDER_IMAGE" --build-arg "RUNTIME_IMAGE=$runtime" \
    "${go_args[@]}" --build-arg "VERSION=$VERSION" --build-arg "SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH" \
    --iidfile "$out/logs/$name-$arch.iid" "${tags[@]}" . >"$out/logs/$name-$arch.log" 2>&1; then
    echo "---- docker build of $name ($arch) failed; the end of $out/logs/$name-$arch.log:" >&2
    grep -v 'go: downloading' "$out/logs/$name-$arch.log" | tail -n 40 >&2
    return 1
  fi
  log "built $repo:$app_version-$arch in $((SECONDS - t))s"
}

# An API server that accepts connections and never answers: the controller
# waits on it, long enough to be seen running.
silent_server='
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
s.settimeout(60)
try:
    while True:
        held.append(s.accept()[0])
except socket.timeout:
    pass
'

# controller_uid REF ARCH: the uid of a running controller of image REF.
controller_uid() {
  local ref="$1" arch="$2" dir lpid cid pid uid="" deadline
  dir="$(mktemp -d)"
  python3 -c "$silent_server" "$dir/port" &
  lpid=$!
  deadline=$((SECONDS + 20))
  while [[ ! -f "$dir/port" ]] && ((SECONDS < deadline)); do sleep 0.1; done
  [[ -f "$dir/port" ]] || die "the stand-in API server did not start"
  printf '%s\n' 'apiVersion: v1' 'kind: Config' \
    "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:$(cat "$dir/port")\", insecure-skip-tls-verify: true}}]" \
    'users: [{name: u, user: {token: x}}]' 'contexts: [{name: c, context: {cluster: c, user: u}}]' \
    'current-context: c' >"$dir/kubeconfig"
  chmod 755 "$dir" && chmod 644 "$dir/kubeconfig"
  cid="$("$docker" run -d --network=host --platform "linux/$arch" -v "$dir:/kc:ro" "$ref" \
    --kubeconfig=/kc/kubeconfig --metrics-address=127.0.0.1:0 --health-address=127.0.0.1:0)"
  deadline=$((SECONDS + 20))
  while ((SECONDS < deadline)); do
    pid="$("$docker" inspect -f '{{.State.Pid}}' "$cid")"
    [[ "$pid" == 0 ]] && break # exited
    uid="$(awk '/^Uid:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)"
    [[ -n "$uid" ]] && break
    sleep 0.2
  done
  [[ -n "$uid" ]] || "$docker" logs "$cid" >&2 || true
  "$docker" rm -f "$cid" >/dev/null
  kill "$lpid" 2>/dev/null || true
  wait "$lpid" 2>/dev/null || true
  rm -rf "$dir"
  echo "$uid"
}

# normalize REF ARCH PLAIN TARBALL: the image REF with every "created" time
# in its config set to SOURCE_DATE_EPOCH (BuildKit writes the build's time
# there, the only thing that differs between two builds of the same
# sources), tagged REF (and PLAIN for the host's architecture) in docker and
# saved to TARBALL as PLAIN, a deterministic tar.
normalize() {
  local ref="$1" arch="$2" plain="$3" tarball="$4"
  local d built cfg id created i
  local layers=() diffs=()
  built="$("$docker" image inspect -f '{{.Id}}' "$ref")"
  created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
  d="$(mktemp -d "$out/normalize.XXXXXX")"
  mkdir -p "$d/x" "$d/a"
  "$docker" save "$ref" | tar -x -C "$d/x"
  cfg="$(sed -n 's/.*"Config":"\([^"]*\)".*/\1/p' "$d/x/manifest.json")"
  mapfile -t layers < <(sed -n 's/.*"Layers":\[\([^]]*\)\].*/\1/p' "$d/x/manifest.json" | tr ',' '\n' | tr -d '"')
  mapfile -t diffs < <(sed -n 's/.*"diff_ids":\[\([^]]*\)\].*/\1/p' "$d/x/$cfg" | tr ',' '\n' | tr -d '"' | sed 's/^sha256://')
  ((${#layers[@]} > 0 && ${#layers[@]} == ${#diffs[@]})) || die "$ref: cannot read the saved image's layers"
  sed -E "s/\"created\":\"[^\"]*\"/\"created\":\"$created\"/g" "$d/x/$cfg" >"$d/config.json"
  id="$(sha256sum <"$d/config.json" | cut -d' ' -f1)"
  mv "$d/config.json" "$d/a/$id.json"
  local list="" files=("$id.json")
  for i in "${!layers[@]}"; do
    mkdir -p "$d/a/${diffs[i]}"
    mv "$d/x/${layers[i]}" "$d/a/${diffs[i]}/layer.tar"
    list+="${list:+,}\"${diffs[i]}/layer.tar\""
    files+=("${diffs[i]}")
  done
  # Into docker, untagged, then tagged: loading PLAIN would take the tag
  # from the host architecture's image.
  if ! "$docker" image inspect "sha256:$id" >/dev/null 2>&1; then
    printf '[{"Config":"%s.json","RepoTags":null,"Layers":[%s]}]' "$id" "$list" >"$d/a/manifest.json"
    tar -C "$d/a" -c manifest.json "${files[@]}" | "$docker" load >/dev/null
  fi
  "$docker" tag "sha256:$id" "$ref"
  [[ "$arch" == "$host_arch" ]] && "$docker" tag "sha256:$id" "$plain"
  [[ "$built" == "sha256:$id" ]] || "$docker" rmi "$built" >/dev/null 2>&1 || true
  if [[ -f "$tarball" && "$(cat "$tarball.id" 2>/dev/null)" == "$id" ]]; then
    log "$tarball is up to date (image sha256:${id:0:12})"
  else
    printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":[%s]}]' "$id" "$plain" "$list" >"$d/a/manifest.json"
    tar -C "$d/a" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
      --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
      -cf "$tarball.tmp" manifest.json "${files[@]}"
    mv "$tarball.tmp" "$tarball"
    echo "$id" >"$tarball.id"
    log "saved $plain ($arch, image sha256:${id:0:12}) to $tarball ($(du -h "$tarball" | cut -f1))"
  fi
  rm -rf "$d"
}

for arch in "${arches[@]}"; do
  step="making the base images for $arch (hack/base-images.sh $arch)"
  env_file="$(./hack/base-images.sh "$arch" | tail -n 1)"
  # shellcheck disable=SC1090
  source "$env_file"
  log "bases: $BUILDER_IMAGE, $RUNTIME_IMAGE, $STATIC_IMAGE"

  # The agent (cgo) shares no compiled packages with the two pure-Go
  # binaries, which share most of theirs: agent alongside controller → CLI.
  step="building the $arch images with BuildKit (logs: $out/logs/*-$arch.log)"
  build ${images[0]} "$arch" &
  agent_job=$!
  rc=0
  { build ${images[1]} "$arch" && build ${images[2]} "$arch"; } || rc=$?
  wait "$agent_job" || rc=$?
  ((rc == 0)) || die "an image did not build (above)"

  # --- checks ---
  bins="$out/bin-$arch"
  rm -rf "$bins" && mkdir -p "$bins"
  can_run=1
  if [[ "$arch" != "$host_arch" ]] && [[ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 || "$arch" != arm64 ]]; then
    can_run=0
  fi
  for spec in "${images[@]}"; do
    read -r name file base repo <<<"$spec"
    ref="$repo:$app_version-$arch"
    step="checking $ref"
    bin="/usr/bin/$name"
    cid="$("$docker" create --platform "linux/$arch" "$ref")"
    "$docker" cp "$cid:$bin" "$bins/$name" && "$docker" export "$cid" >"$bins/$name.rootfs.tar" ||
      { "$docker" rm "$cid" >/dev/null; die "$ref: no $bin in the image"; }
    "$docker" rm "$cid" >/dev/null
    tar -tf "$bins/$name.rootfs.tar" >"$bins/$name.files"
    rm -f "$bins/$name.rootfs.tar"
    want_machine="$(case "$arch" in amd64) echo X86-64 ;; arm64) echo AArch64 ;; esac)"
    readelf -h "$bins/$name" | grep -q "Machine:.*$want_machine" || die "$ref: $bin is not an $arch binary"
    if [[ "$base" == glibc ]]; then
      # cgo with Go's internal linker: libc.so.6 only (libdl and libpthread
      # are part of it since glibc 2.34), and the interpreter in the image.
      needed="$(readelf -d "$bins/$name" | awk '/NEEDED/ {gsub(/[][]/, "", $NF); print $NF}' | sort | tr '\n' ' ')"
      for lib in $needed; do
        case "$lib" in libc.so.6 | libdl.so.2 | libpthread.so.0) ;; *) die "$ref: $bin needs $lib, which the glibc base lacks" ;; esac
        grep -q "/$lib\$" "$bins/$name.files" || die "$ref: $lib not in the image"
      done
      interp="$(readelf -l "$bins/$name" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')"
      [[ -n "$interp" ]] || die "$ref: $bin has no program interpreter (expected a dynamic cgo binary)"
      grep -qxE "(\./)?${interp#/}" "$bins/$name.files" || die "$ref: interpreter $interp not in the image"
      log "$ref: $bin needs $needed(interpreter $interp), all in the image"
    else
      if readelf -l "$bins/$name" | grep -q 'program interpreter'; then die "$ref: $bin is not static"; fi
      user="$("$docker" image inspect -f '{{.Config.User}}' "$ref")"
      [[ "$user" == 65532:65532 ]] || die "$ref: runs as '$user', not 65532:65532"
      grep -qxE '(\./)?etc/ssl/certs/ca-certificates\.crt' "$bins/$name.files" ||
        die "$ref: no CA bundle"
    fi
    rm -f "$bins/$name.files"
    if [[ "${IMAGES_NO_VERIFY:-}" == 1 ]]; then continue; fi
    if ((!can_run)); then
      log "$ref: not run (no binfmt handler for $arch binaries on this $host_arch host; docs/images.md)"
      continue
    fi
    run=("$docker" run --rm --network=none --platform "linux/$arch" "$ref")
    case "$name" in
      gpuheal-agent)
        o="$("${run[@]}" --standalone --once --gpu-backend=sim --kmsg-path= --predictor=off --state-dir=/tmp 2>&1)" ||
          { echo "$o" >&2; die "$ref: --standalone --once --gpu-backend=sim failed"; }
        grep -q 'GPUs 8 found' <<<"$o" || { echo "$o" >&2; die "$ref: no sim snapshot"; }
        log "$ref: runs (--standalone --once --gpu-backend=sim: $(grep -o 'GPUs 8 found[^$]*' <<<"$o" | head -n 1))"
        ;;
      gpuheal-controller)
        o="$("${run[@]}" --help 2>&1)" || true
        grep -q -- '--kubeconfig' <<<"$o" || { echo "$o" >&2; die "$ref: --help printed no usage"; }
        # The uid it runs as, seen from outside while it runs (the stand-in
        # API server needs python3; without it, the image's User above).
        if command -v python3 >/dev/null; then
          uid="$(controller_uid "$ref" "$arch")"
          [[ "$uid" == 65532 ]] || die "$ref: runs as uid '$uid', not 65532"
          log "$ref: runs (--help), as uid $uid"
        else
          log "$ref: runs (--help); its uid not seen running (no python3), the image's User is 65532:65532"
        fi
        ;;
      gpuheal)
        o="$("${run[@]}" --version 2>&1)" || { echo "$o" >&2; die "$ref: --version failed"; }
        grep -qF "$VERSION" <<<"$o" || { echo "$o" >&2; die "$ref: --version does not say $VERSION"; }
        log "$ref: runs ($o)"
        ;;
    esac
  done

  # --- tarballs ---
  : >"$out/$arch.txt.tmp"
  for spec in "${images[@]}"; do
    read -r name file base repo <<<"$spec"
    ref="$repo:$app_version-$arch"
    plain="$repo:$app_version"
    tarball="$out/$name-$app_version-$arch.tar"
    step="saving $plain ($arch) to $tarball"
    normalize "$ref" "$arch" "$plain" "$tarball"
    echo "$plain $tarball" >>"$out/$arch.txt.tmp"
  done
  mv "$out/$arch.txt.tmp" "$out/$arch.txt"
  (cd "$out" && sha256sum "bin-$arch"/* ./*-"$app_version-$arch".tar >"SHA256SUMS-$arch")

  step="summary"
  log "$arch images:"
  for spec in "${images[@]}"; do
    read -r name file base repo <<<"$spec"
    printf '   %-48s %s\n' "$repo:$app_version-$arch" \
      "$("$docker" image inspect -f '{{.Id}} {{.Size}}' "$repo:$app_version-$arch" | awk '{printf "%s  %.1f MB", substr($1, 1, 19), $2 / 1e6}')"
  done
done
log "done in $((SECONDS - t0))s; tarballs and their references: $out/{$(IFS=,; echo "${arches[*]}")}.txt"
