# syntax=docker/dockerfile:1
# Image of cmd/cosmosdb-external-scaler. Build from the repository root:
#
#   docker buildx build -f deploy/external-scaler.Dockerfile \
#     --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v0.2.0 --build-arg COMMIT=$(git rev-parse HEAD) \
#     -t <registry>/cosmosdb-external-scaler:v0.2.0 .
#
# `make image` builds the same image without a container engine (an OCI
# image tarball, deploy/image). tests/repo builds the command from exactly
# the files the COPY lines below bring in, so a directory missing here fails CI.

# The builder runs on the build machine's platform and cross-compiles
# (CGO_ENABLED=0: a static binary, no emulation needed for other platforms).
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=
ARG COMMIT=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY internal ./internal
COPY pkg ./pkg
COPY cmd/cosmosdb-external-scaler ./cmd/cosmosdb-external-scaler
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X github.com/kedacore/keda-cosmosdb-scaler/internal/version.version=${VERSION} -X github.com/kedacore/keda-cosmosdb-scaler/internal/version.commit=${COMMIT}" \
      -o /out/cosmosdb-external-scaler ./cmd/cosmosdb-external-scaler

# distroless/static: CA certificates, /etc/passwd with nonroot (65532), no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/cosmosdb-external-scaler /cosmosdb-external-scaler
USER 65532:65532
EXPOSE 6000 6001
ENTRYPOINT ["/cosmosdb-external-scaler"]
