# syntax=docker/dockerfile:1
# gpuheal, the operator's CLI (also kubectl-gpuheal): a static binary on
# distroless/static, as the nonroot user. For CI jobs and one-off triage
# (`docker run --rm -v $PWD:/data gpuheal diagnose --kmsg /data/dmesg.log`).
#
#   docker build -f build/gpuheal.Dockerfile --build-arg VERSION=v0.1.0 -t gpuheal .

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
      -o /out/gpuheal ./cmd/gpuheal

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gpuheal /usr/bin/gpuheal
ENTRYPOINT ["/usr/bin/gpuheal"]
