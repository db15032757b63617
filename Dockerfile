# syntax=docker/dockerfile:1
# rcamesh: one static binary that runs any set of the mesh's services.
#   docker build -t rcamesh:dev --build-arg VERSION=$(git describe --always) .

FROM golang:1.26 AS build
WORKDIR /src
# cgo for the tree-sitter grammars of SAST triage; linked statically (netgo,
# osusergo: no glibc NSS) so the distroless static image still runs it.
ENV CGO_ENABLED=1 GOTOOLCHAIN=local
COPY go.mod go.sum go.work go.work.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -tags netgo,osusergo \
      -ldflags "-s -w -X main.version=${VERSION} -linkmode external -extldflags -static" -o /out/rcamesh ./cmd/rcamesh \
 && mkdir -p /out/data /out/creds/router /out/creds/tools /out/creds/critic /out/creds/brain /out/creds/delivery

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/rcamesh /usr/local/bin/rcamesh
# Data (embedded NATS store), writable by the nonroot user (uid 65532).
COPY --from=build --chown=65532:65532 /out/data /data
# Per-service credentials in split mode (docker-compose.yml: the
# mesh-credentials job writes them, each service mounts its own volume).
COPY --from=build --chown=65532:65532 /out/creds /creds
VOLUME ["/data"]
# NATS stays inside the process (no -nats.listen): nothing but the API is exposed.
EXPOSE 8080 9090
USER nonroot:nonroot
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=5 \
  CMD ["/usr/local/bin/rcamesh", "healthcheck", "-url", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/usr/local/bin/rcamesh"]
# All services in one process with embedded NATS, reachable from outside the
# container, with API tokens required (a process listening beyond loopback
# without authentication refuses to start):
#   docker run -p 8080:8080 -v $PWD/deploy/secrets/api-tokens:/run/secrets/api_tokens:ro rcamesh:dev
# Open mode for a laptop (no authentication): add -auth.insecure-open to the command.
CMD ["serve", "-target=all", "-grpc.addr=0.0.0.0:9090", "-http.addr=0.0.0.0:8080", "-data.dir=/data", "-auth.tokens-file=/run/secrets/api_tokens"]
