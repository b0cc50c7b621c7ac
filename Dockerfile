# The rlctl image deploy/k8s names: rlctl alone, a static binary on an
# empty base (no shell, no libc), run as an unprivileged user.
#
#   docker build -t ghcr.io/rlctl/rlctl:latest --build-arg VERSION=$(git describe --tags --always) .
#
# What it lacks: redis-server, so `redis: spawn` scenarios are for a
# machine with Redis installed (embedded, a URL and http targets run here).
# internal/cli/docker_test.go builds the binary with the RUN line below and
# checks that it is static.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/rlctl/rlctl/internal/cli.Version=${VERSION}" -o /out/rlctl ./cmd/rlctl
# An empty /tmp (histories spilled to disk) and a working directory (the
# default ./reports), both the user's.
RUN mkdir /out/tmp /out/work

FROM scratch
COPY --from=build /out/rlctl /rlctl
COPY --from=build --chown=65532:65532 /out/tmp /tmp
COPY --from=build --chown=65532:65532 /out/work /work
WORKDIR /work
# The CA roots, for rediss:// and https:// targets.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
USER 65532:65532
ENTRYPOINT ["/rlctl"]
