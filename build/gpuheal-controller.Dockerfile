# syntax=docker/dockerfile:1
# gpuheal-controller: pure Go (the SQLite audit store is modernc.org/sqlite),
# a static binary on distroless/static, as the nonroot user (65532).
#
#   docker build -f build/gpuheal-controller.Dockerfile --build-arg VERSION=v0.1.0 -t gpuheal-controller .
#
# Cross-compiled on the build platform for each target platform
# (docker buildx build --platform linux/amd64,linux/arm64 ...).

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/gpuheal/gpuheal/internal/version.Version=${VERSION}" \
      -o /out/gpuheal-controller ./cmd/gpuheal-controller && mkdir -p /out/empty

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gpuheal-controller /usr/bin/gpuheal-controller
# The chart mounts the audit volume here; the directory exists for runs
# without it (docker run) and belongs to the nonroot user.
COPY --from=build --chown=65532:65532 /out/empty/ /var/lib/gpuheal/
EXPOSE 8080 8081
ENTRYPOINT ["/usr/bin/gpuheal-controller"]
