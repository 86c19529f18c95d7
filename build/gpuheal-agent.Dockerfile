# gpuheal-agent. It links cgo only to dlopen libnvidia-ml (go-nvml), so it
# needs glibc at run time, not the NVIDIA libraries: those come from the
# host through the NVIDIA container toolkit (the chart's runtimeClassName).
# Hence a glibc base without a shell (distroless/base), built on the same
# Debian release as the builder so the binary asks for no newer glibc than
# the image has. The image runs as root: the chart keeps it to the
# capabilities and host paths it needs (docs/install.md).
#
#   DOCKER_BUILDKIT=1 docker build -f build/gpuheal-agent.Dockerfile \
#     --build-arg VERSION=v0.1.0 [--platform linux/arm64] -t gpuheal-agent .
#
# `make images` builds it from locally made bases (hack/base-images.sh) by
# overriding BUILDER_IMAGE and RUNTIME_IMAGE; docs/images.md. BuildKit is
# needed (cache mounts, $BUILDPLATFORM); Docker 20.10's built-in one will do.
#
# Another architecture is cross-compiled on the build platform with Debian's
# cross compiler (the local builder has it; on golang:*-bookworm it is
# installed below), so no emulation is needed.

# Base images are pinned by digest (the tag says what it is, the digest
# which one): a rebuild takes the same bases until a commit moves the pin.
# docs/images.md says where the digests come from and how to move them.
ARG BUILDER_IMAGE=golang:1.26-bookworm@sha256:b305420a68d0f229d91eb3b3ed9e519fcf2cf5461da4bef997bf927e8c0bfd2b
ARG RUNTIME_IMAGE=gcr.io/distroless/base-debian12@sha256:9e9b50d2048db3741f86a48d939b4e4cc775f5889b3496439343301ff54cdba8

FROM --platform=$BUILDPLATFORM ${BUILDER_IMAGE} AS build
ARG TARGETARCH
ARG BUILDARCH
RUN set -eu; \
    if [ "$TARGETARCH" != "$BUILDARCH" ]; then \
      case "$TARGETARCH" in \
        arm64) cc=aarch64-linux-gnu-gcc; pkgs="gcc-aarch64-linux-gnu libc6-dev-arm64-cross" ;; \
        amd64) cc=x86_64-linux-gnu-gcc; pkgs="gcc-x86-64-linux-gnu libc6-dev-amd64-cross" ;; \
        *) echo "no cross compiler known for $TARGETARCH" >&2; exit 1 ;; \
      esac; \
      if ! command -v "$cc" >/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends $pkgs && rm -rf /var/lib/apt/lists/*; \
      fi; \
    fi
WORKDIR /src
# The Go environment of the machine that builds (make images passes the
# host's): on a network that reaches proxy.golang.org they can stay unset.
ARG GOPROXY
ARG GOSUMDB
ARG GONOSUMDB
ARG GOPRIVATE
ARG GOFLAGS
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# The time of every file the image adds (the tree under /out/root is copied
# whole, so that its directories get this time too, not the build's);
# make images passes the commit's time.
ARG SOURCE_DATE_EPOCH=0
# -linkmode=internal, as in the Makefile (AGENT_LINK): with the external
# linker the dynamic loader relocates the Go read-only data at start and the
# agent's RSS grows (see docs/benchmarks.md). -trimpath and an empty build
# id make the binary depend on the sources and the toolchain only.
ENV CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    set -eu; \
    cc=gcc; \
    if [ "$TARGETARCH" != "$BUILDARCH" ]; then \
      case "$TARGETARCH" in arm64) cc=aarch64-linux-gnu-gcc ;; amd64) cc=x86_64-linux-gnu-gcc ;; esac; \
    fi; \
    CC=$cc GOOS=linux GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -buildid= -X github.com/gpuheal/gpuheal/internal/version.Version=${VERSION} -linkmode=internal" \
      -o /out/root/usr/bin/gpuheal-agent ./cmd/gpuheal-agent; \
    find /out/root -exec touch -h -d "@${SOURCE_DATE_EPOCH}" {} +

FROM ${RUNTIME_IMAGE}
ARG VERSION=dev
LABEL org.opencontainers.image.title=gpuheal-agent \
      org.opencontainers.image.source=https://github.com/gpuheal/gpuheal \
      org.opencontainers.image.version=${VERSION}
COPY --from=build /out/root/ /
EXPOSE 9400
ENTRYPOINT ["/usr/bin/gpuheal-agent"]
