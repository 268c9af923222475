# syntax=docker/dockerfile:1
# Multi-stage build of both binaries (targets: recordsd, civicgate). Used by docker-compose.yml.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/civicgate ./cmd/civicgate \
 && CGO_ENABLED=0 go build -trimpath -o /out/recordsd ./cmd/recordsd

FROM debian:bookworm-slim AS runtime
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* && useradd --system --uid 10001 --home /data civicgate \
 && mkdir -p /data /config && chown civicgate /data /config
ENV XDG_DATA_HOME=/data XDG_CONFIG_HOME=/config

FROM runtime AS recordsd
COPY --from=build /out/recordsd /usr/local/bin/recordsd
USER civicgate
ENTRYPOINT ["/usr/local/bin/recordsd"]
CMD ["serve"]

FROM runtime AS civicgate
COPY --from=build /out/civicgate /usr/local/bin/civicgate
COPY caddyfile/ /etc/civicgate/
COPY backend/schema/records.graphqls /etc/civicgate/records.graphqls
ENV CIVICGATE_SCHEMA=/etc/civicgate/records.graphqls
USER civicgate
ENTRYPOINT ["/usr/local/bin/civicgate"]
CMD ["run", "--config", "/etc/civicgate/Caddyfile", "--adapter", "caddyfile"]
