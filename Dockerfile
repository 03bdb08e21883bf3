# weir's container image: a static binary on an empty base.
#
#   docker build --build-arg VERSION=v0.1.0 -t weir:v0.1.0 .
#   docker run --rm -v "$PWD/pipeline.yaml:/etc/weir/weir.yaml:ro" -v weir-state:/var/lib/weir weir:v0.1.0
#
# Two stages. The build stage runs deploy/container/rootfs.sh with the Go
# toolchain, which builds the binary (scripts/build.sh: CGO off, trimmed,
# version stamped) and lays out the root filesystem: the user weir (65532),
# the CA bundle, /etc/weir, /tmp, and the state directory apart. The run
# stage is FROM scratch and copies both: no shell, no package manager,
# nothing to patch but weir. CI builds the run stage from this file with buildah on
# the output of the same script (.ci/release.sh), unpacks the image and runs
# it; docs/deploy.md says how to run it.

ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# The modules first, so that a change of the source alone reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN GOOS=$TARGETOS GOARCH=$TARGETARCH deploy/container/rootfs.sh /out "$VERSION"

FROM scratch
COPY --from=build /out/rootfs/ /
COPY --from=build --chown=65532:65532 /out/state/ /var/lib/weir/
USER 65532:65532
# Relative paths in a configuration (data_dir: ./state) land in the volume.
WORKDIR /var/lib/weir
VOLUME ["/var/lib/weir"]
# /metrics, /healthz, /readyz. weir listens on 127.0.0.1:9464 unless told
# otherwise (--metrics-addr 0.0.0.0:9464 to publish it; docs/deploy.md says
# what that exposes and how to guard it).
EXPOSE 9464
# The image has no curl: weir asks its own /healthz, on loopback, which is
# where it listens by default. With metrics.address off there is nothing to
# ask; run with --no-healthcheck then.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 CMD ["/weir", "health", "-timeout", "5s"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/weir"]
CMD ["run", "-c", "/etc/weir/weir.yaml"]
LABEL org.opencontainers.image.title="weir" \
      org.opencontainers.image.description="Stream ETL with at-least-once delivery and exact, contiguous progress" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/weir-etl/weir"
