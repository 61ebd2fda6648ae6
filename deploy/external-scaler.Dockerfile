# Image of cmd/cosmosdb-external-scaler. Build from the repository root:
#   docker build -f deploy/external-scaler.Dockerfile -t <registry>/cosmosdb-external-scaler:<tag> .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/cosmosdb-external-scaler ./cmd/cosmosdb-external-scaler
COPY pkg ./pkg
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/cosmosdb-external-scaler ./cmd/cosmosdb-external-scaler

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/cosmosdb-external-scaler /cosmosdb-external-scaler
USER 65532:65532
EXPOSE 6000 6001
ENTRYPOINT ["/cosmosdb-external-scaler"]
