# llmbench as a small static image, for the pods of `llmbench k8s job` (README "Beyond one
# machine"):
#
#   docker build -t registry.example/llmbench:0.1 --build-arg VERSION=0.1 .
#
# Build stage: a static binary (no cgo: every dependency is pure Go).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=0.1.0-dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/llmbench ./cmd/llmbench

# Run stage: distroless static (CA certificates, /etc/passwd, tzdata; no shell), as the
# nonroot user (65532), which the manifest's pods also ask for.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/llmbench /llmbench
USER 65532:65532
ENTRYPOINT ["/llmbench"]
