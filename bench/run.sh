#!/usr/bin/env bash
# One command for weir's end-to-end benchmarks beside their bare loops:
#
#   bash bench/run.sh                 # from the repository root
#   RUNS=5 RECORDS=2000000 bash bench/run.sh
#
# Each workload's cases take turns, run after run; every command prints
# medians of records/s and CPU µs per record (user+sys) for weir and for its
# reference, their ratio, peak RSS, and the load average during the runs.
#
#   file → filter → file, file → map → file   always (bench/file; with
#                                              WEIR_BENTHOS=<binary>, Benthos
#                                              v4.60's file → filter → file too)
#   Kafka → file, defaults and tuned          when WEIR_KAFKA_BROKERS is set
#   file → PostgreSQL against psql's \copy    when WEIR_POSTGRES_URL is set
#                                              (with WEIR_POSTGRES_PASSWORD)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
RECORDS=${RECORDS:-2000000}
bin=$(mktemp -d)/weir
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/weir
echo "== $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), weir $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

echo; echo "== file → filter → file, file → map → file (bench/file)"
go run ./bench/file -bin "$bin" -runs "$RUNS" -records "$RECORDS" -case '^1 sink, acks on|^map, 1 sink' ${WEIR_BENTHOS:+-benthos "$WEIR_BENTHOS"}

if [ -n "${WEIR_KAFKA_BROKERS:-}" ]; then
  echo; echo "== Kafka → file, 100-byte records: the defaults, then batch.max_records 100000 (bench/kafka)"
  go run ./bench/kafka -runs "$((RUNS < 3 ? RUNS : 3))" -records "${KAFKA_RECORDS:-10000000}" -cases bare-file,file
  go run ./bench/kafka -runs "$((RUNS < 3 ? RUNS : 3))" -records "${KAFKA_RECORDS:-10000000}" -cases file -max-records 100000
else
  echo; echo "== Kafka: skipped (set WEIR_KAFKA_BROKERS)"
fi

if [ -n "${WEIR_POSTGRES_URL:-}" ]; then
  echo; echo "== file → PostgreSQL against psql's \\copy (bench/postgres)"
  go run ./bench/postgres -bin "$bin" -runs "$RUNS" -records "$((RECORDS / 2))" -case 'psql,weir insert,loop'
else
  echo; echo "== PostgreSQL: skipped (set WEIR_POSTGRES_URL and WEIR_POSTGRES_PASSWORD: bash .ci/postgres.sh start && eval \"\$(bash .ci/postgres.sh env)\")"
fi
