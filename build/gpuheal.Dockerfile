# gpuheal, the operator's CLI (also kubectl-gpuheal): a static binary on
# distroless/static, as the nonroot user (65532). For CI jobs and one-off
# triage (`docker run --rm -v $PWD:/data gpuheal diagnose --kmsg /data/dmesg.log`).
#
#   DOCKER_BUILDKIT=1 docker build -f build/gpuheal.Dockerfile \
#     --build-arg VERSION=v0.1.0 [--platform linux/arm64] -t gpuheal .
#
# Cross-compiled on the build platform for the target platform. `make
# images` builds it from locally made bases (hack/base-images.sh) by
# overriding BUILDER_IMAGE and RUNTIME_IMAGE; docs/images.md.

ARG BUILDER_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM --platform=$BUILDPLATFORM ${BUILDER_IMAGE} AS build
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
ARG TARGETARCH
# Every file of the image gets this time; make images passes the commit's.
ARG SOURCE_DATE_EPOCH=0
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    set -eu; \
    CGO_ENABLED=0 GOOS=linux GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -buildid= -X github.com/gpuheal/gpuheal/internal/version.Version=${VERSION}" \
      -o /out/gpuheal ./cmd/gpuheal; \
    touch -d "@${SOURCE_DATE_EPOCH}" /out/gpuheal

FROM ${RUNTIME_IMAGE}
ARG VERSION=dev
LABEL org.opencontainers.image.title=gpuheal \
      org.opencontainers.image.source=https://github.com/gpuheal/gpuheal \
      org.opencontainers.image.version=${VERSION}
COPY --from=build /out/gpuheal /usr/bin/gpuheal
USER 65532:65532
ENTRYPOINT ["/usr/bin/gpuheal"]
