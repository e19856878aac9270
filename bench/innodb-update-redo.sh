#!/usr/bin/env bash
# How many bytes of redo an UPDATE of an event-like row writes on MariaDB, when the update changes the
# row's size (as a claim does: a lease owner where there was none, a longer status) and when it does
# not, for a row that carries a payload and headers (about 3.6 KB of text, as the bench's events do)
# and for one that does not. Runs in a scratch database of its own, dropped at the end; reads the
# server-wide Innodb_os_log_written, so run it on a quiet server. Usage: bash bench/innodb-update-redo.sh
set -euo pipefail
client=(mariadb --host="${MARIADB_HOST:-127.0.0.1}" --port="${MARIADB_PORT:-3306}" --user="${MARIADB_USER:-root}" --batch --skip-column-names)
database="redo_probe_$$"
rows=10000
trap '"${client[@]}" -e "drop database if exists $database"' EXIT

"${client[@]}" <<SQL
create database $database;
use $database;
create table wide (id bigint primary key auto_increment, status varchar(64) not null, lease_owner varchar(255) null,
  payload longtext not null, headers longtext not null, key (status)) engine = innodb;
create table narrow (id bigint primary key auto_increment, status varchar(64) not null, lease_owner varchar(255) null,
  key (status)) engine = innodb;
insert into wide (status, payload, headers) select 'received', repeat('{"k":"abcdefgh"},', 70), repeat('x-header: value;', 150) from seq_1_to_$rows;
insert into narrow (status) select 'received' from seq_1_to_$rows;
SQL

redo() { "${client[@]}" -e "show global status like 'Innodb_os_log_written'" | cut -f2; }
per_row() {
  local before after
  before=$(redo)
  "${client[@]}" -e "update $database.$1 set $2"
  after=$(redo)
  echo $(((after - before) / rows))
}
for table in wide narrow; do
  grown=$(per_row "$table" "status = 'processing', lease_owner = 'worker-abc-123'")
  same=$(per_row "$table" "status = 'processing', lease_owner = 'worker-xyz-999'")
  echo "$table row: $grown bytes of redo per row when the update changes its size, $same when it does not"
done
