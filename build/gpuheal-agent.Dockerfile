# syntax=docker/dockerfile:1
# gpuheal-agent. It links cgo only to dlopen libnvidia-ml (go-nvml), so it
# needs glibc at run time, not the NVIDIA libraries: those come from the
# host through the NVIDIA container toolkit (the chart's runtimeClassName).
# Hence distroless/base (glibc, no shell), built on the same Debian release
# so the binary asks for no newer glibc than the image has.
#
#   docker build -f build/gpuheal-agent.Dockerfile --build-arg VERSION=v0.1.0 -t gpuheal-agent .
#
# cgo rules out cross-compiling from $BUILDPLATFORM without a cross
# toolchain: for another architecture, build on it (or under emulation).
# The image runs as root: the chart keeps it to the capabilities and host
# paths it needs (docs/install.md).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# -linkmode=internal, as in the Makefile: with the external linker the
# dynamic loader relocates the Go read-only data at start and the agent's
# RSS grows by ~10 MiB (docs/benchmarks.md).
ENV CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath \
      -ldflags "-s -w -X github.com/gpuheal/gpuheal/internal/version.Version=${VERSION} -linkmode=internal" \
      -o /out/gpuheal-agent ./cmd/gpuheal-agent

FROM gcr.io/distroless/base-debian12
COPY --from=build /out/gpuheal-agent /usr/bin/gpuheal-agent
EXPOSE 9400
ENTRYPOINT ["/usr/bin/gpuheal-agent"]
