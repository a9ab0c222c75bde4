# StreamFusion image: a Flink image with the StreamFusion entrypoint at
# /docker-entrypoint.sh and the payload JARs in lib.
#
#   docker build --build-arg FLINK_IMAGE=flink:2.2.1-scala_2.12-java17 -t my/flink:2.2.1-streamfusion .
#
# The payload JARs (loader, runtime core, extensions) come from the build
# context's payloads/ directory (PAYLOADS to change it); nothing is
# downloaded. Definitions per Flink line live in images/.
ARG FLINK_IMAGE=flink:2.2.1-scala_2.12-java17
ARG GO_IMAGE=golang:1.26-bookworm

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY internal ./internal
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o /out/entrypoint ./cmd/entrypoint

# Flink's own image, to take its original script from.
FROM ${FLINK_IMAGE} AS flink

FROM ${FLINK_IMAGE}
ARG PAYLOADS=payloads
# Flink's script moves aside; the entrypoint takes its place, so both the
# image ENTRYPOINT and Kubernetes' `command: /docker-entrypoint.sh` reach it.
COPY --from=flink /docker-entrypoint.sh /opt/streamfusion/docker-entrypoint.sh
COPY --from=build --chmod=0555 /out/entrypoint /docker-entrypoint.sh
COPY --chmod=0644 ${PAYLOADS}/*.jar /opt/flink/lib/
# No GLIBC_TUNABLES: a reserved optional_static_tls comes out of every thread
# stack and kills the JVM at its first subprocess (docs/glibc-tunables.md).
# A broken image fails to build. ENTRYPOINT, CMD, USER and WORKDIR stay the base's.
RUN ["/docker-entrypoint.sh", "streamfusion", "check"]
