# gpuheal-controller: pure Go (the SQLite audit store is modernc.org/sqlite),
# a static binary on distroless/static (CA certificates for the API server
# and AWS, tzdata, /etc/passwd), as the nonroot user (65532).
#
#   DOCKER_BUILDKIT=1 docker build -f build/gpuheal-controller.Dockerfile \
#     --build-arg VERSION=v0.1.0 [--platform linux/arm64] -t gpuheal-controller .
#
# Cross-compiled on the build platform for the target platform. `make
# images` builds it from locally made bases (hack/base-images.sh) by
# overriding BUILDER_IMAGE and RUNTIME_IMAGE; docs/images.md.

# Base images are pinned by digest (the tag says what it is, the digest
# which one): a rebuild takes the same bases until a commit moves the pin.
# docs/images.md says where the digests come from and how to move them.
ARG BUILDER_IMAGE=golang:1.26-bookworm@sha256:b305420a68d0f229d91eb3b3ed9e519fcf2cf5461da4bef997bf927e8c0bfd2b
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639

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
# The time of every file the image adds (the tree under /out/root is copied
# whole, so that its directories get this time too, not the build's);
# make images passes the commit's time.
ARG SOURCE_DATE_EPOCH=0
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    set -eu; \
    CGO_ENABLED=0 GOOS=linux GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -buildid= -X github.com/gpuheal/gpuheal/internal/version.Version=${VERSION}" \
      -o /out/root/usr/bin/gpuheal-controller ./cmd/gpuheal-controller; \
    mkdir -p /out/root/var/lib/gpuheal; \
    chown 65532:65532 /out/root/var/lib/gpuheal; \
    find /out/root -exec touch -h -d "@${SOURCE_DATE_EPOCH}" {} +

FROM ${RUNTIME_IMAGE}
ARG VERSION=dev
LABEL org.opencontainers.image.title=gpuheal-controller \
      org.opencontainers.image.source=https://github.com/gpuheal/gpuheal \
      org.opencontainers.image.version=${VERSION}
# /usr/bin/gpuheal-controller, and /var/lib/gpuheal: the chart mounts the
# audit volume there; the directory exists for runs without it (docker run)
# and belongs to the nonroot user.
COPY --from=build /out/root/ /
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/bin/gpuheal-controller"]
