#!/bin/sh
# Creates Temporal's two databases in PostgreSQL and brings their schemas up
# to the version the admin-tools image ships. Every step is idempotent, so the
# service can run on every `docker compose up`.
set -eu
: "${POSTGRES_SEEDS:?set POSTGRES_SEEDS to the PostgreSQL host}"
: "${POSTGRES_USER:?set POSTGRES_USER}"
: "${SQL_PASSWORD:?set SQL_PASSWORD (the PostgreSQL password)}"
port=${DB_PORT:-5432}
schemas=/etc/temporal/schema/postgresql/v12

sqltool() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$port" -u "$POSTGRES_USER" "$@"
}

for db in temporal temporal_visibility; do
  case $db in
    temporal) dir=$schemas/temporal/versioned ;;
    *) dir=$schemas/visibility/versioned ;;
  esac
  echo "setup-postgres: database $db"
  sqltool --db "$db" create
  sqltool --db "$db" setup-schema -v 0.0
  sqltool --db "$db" update-schema -d "$dir"
done
echo "setup-postgres: done"
