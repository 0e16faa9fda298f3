# spoc's image: the same binary as the release, for `spoc run` as a Job next
# to the server (deploy/kubernetes/spoc-run-job.yaml) and `spoc tune`
# workers in the cluster. See docs/kubernetes.md.
#
#   docker build -t REGISTRY/spoc:TAG . && docker push REGISTRY/spoc:TAG
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# pure Go (SQLite is modernc.org/sqlite): a static binary
RUN CGO_ENABLED=0 go build -trimpath -o /out/spoc ./cmd/spoc

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/spoc /usr/local/bin/spoc
ENTRYPOINT ["/usr/local/bin/spoc"]
