"""JdbcSinkConnector's writing of a batch of records into tables, in one transaction, as
Confluent's JdbcDbWriter does it (insert, upsert or update; tombstones delete with
delete.enabled; auto.create and auto.evolve), and exactly once: the next offset of every
partition a batch came from is kept in `__kctl_connect_offsets` in the same transaction, so
records of a batch written before a crash are skipped when Spark replays it.

Within a batch only the last record of each primary key is written, so a batch is a set of
changes to distinct rows and their order does not matter. A record that cannot be written
fails the task, naming it: `failed` is the one place that decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    Table,
    Text,
    and_,
    bindparam,
    delete,
    inspect,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateColumn
from sqlalchemy.sql import Executable

from connect.converters import ConversionError, Converter, Data, Schema
from connect.jdbc import types

LEDGER = "__kctl_connect_offsets"
KAFKA_PK_FIELDS = ("__connect_topic", "__connect_partition", "__connect_offset")
_KAFKA_SCHEMAS = (Schema("string"), Schema("int32"), Schema("int64"))


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None

    def where(self) -> str:
        key = None if self.key is None else self.key.decode(errors="replace")
        return f"topic={self.topic} partition={self.partition} offset={self.offset} key={key}"


class RecordFailed(RuntimeError):
    """A record the sink cannot write: the task fails with this message."""


@dataclass(frozen=True)
class SinkSettings:
    connector: str
    insert_mode: str = "insert"
    pk_mode: str = "none"
    pk_fields: tuple[str, ...] = ()
    table_format: str = "${topic}"
    auto_create: bool = False
    auto_evolve: bool = False
    delete_enabled: bool = False
    batch_size: int = 3000
    fields_whitelist: tuple[str, ...] = ()

    @classmethod
    def of_config(cls, name: str, config: Mapping[str, str]) -> SinkSettings:
        def flag(key: str) -> bool:
            return config.get(key, "false").strip().lower() == "true"

        return cls(
            name,
            config.get("insert.mode", "insert").strip().lower(),
            config.get("pk.mode", "none").strip().lower(),
            _names(config.get("pk.fields", "")),
            config.get("table.name.format", "${topic}").strip() or "${topic}",
            flag("auto.create"),
            flag("auto.evolve"),
            flag("delete.enabled"),
            int(config.get("batch.size", "3000")),
            _names(config.get("fields.whitelist", "")),
        )


@dataclass
class Change:
    """What one record does to its table: write `row`, or (a tombstone) delete the row of `key`."""

    record: Record
    table: str
    pk: tuple[str, ...]
    key: tuple[object, ...]
    row: dict[str, object] | None
    schemas: dict[str, Schema] = field(default_factory=dict)  # the row's fields', for DDL


class JdbcWriter:
    def __init__(self, settings: SinkSettings, key: Converter, value: Converter, engine: Engine) -> None:
        self.settings = settings
        self.key_converter = key
        self.value_converter = value
        self.engine = engine
        self.ledger = Table(
            LEDGER,
            MetaData(),
            Column("connector", Text, primary_key=True),
            Column("topic", Text, primary_key=True),
            Column("partition", Integer, primary_key=True, autoincrement=False),
            Column("next_offset", BigInteger, nullable=False),
        )

    def write(self, records: Sequence[Record]) -> None:
        """The records, in one transaction; a replayed batch's written records are skipped."""
        ordered = sorted(records, key=lambda r: (r.topic, r.partition, r.offset))
        try:
            with self.engine.begin() as connection:
                self._write(connection, ordered, self.settings.batch_size)
        except DBAPIError:
            with self.engine.connect() as connection:  # again one by one, to name the record
                with connection.begin() as transaction:
                    self._write(connection, ordered, 1)
                    transaction.rollback()
            raise

    def failed(self, record: Record, reason: str) -> None:
        """The decision on a record that cannot be written: the task fails, naming it."""
        raise RecordFailed(f"cannot write the record at {record.where()}: {reason}")

    def _write(self, connection: Connection, records: Sequence[Record], chunk: int) -> None:
        self.ledger.create(connection, checkfirst=True)
        written = self._written(connection)
        fresh = [r for r in records if r.offset >= written.get((r.topic, r.partition), 0)]
        latest: dict[tuple[object, ...], Change] = {}
        for record in fresh:
            change = self._change(record)
            if change is not None:
                identity = change.key if change.pk else (record.topic, record.partition, record.offset)
                latest.pop((change.table, *identity), None)  # the later record replaces it
                latest[(change.table, *identity)] = change
        by_table: dict[str, list[Change]] = {}
        for change in latest.values():
            by_table.setdefault(change.table, []).append(change)
        for name, changes in by_table.items():
            table = self._table(connection, name, changes)
            if table is not None:
                self._apply(connection, table, changes, chunk)
        self._record_offsets(connection, records)

    # -- records into changes ------------------------------------------------------------
    def _change(self, record: Record) -> Change | None:
        settings = self.settings
        table = settings.table_format.replace("${topic}", record.topic)
        try:
            key = None if record.key is None else self.key_converter.to_data(record.key)
            if record.value is None:
                return self._deletion(record, table, key)
            value = self.value_converter.to_data(record.value)
        except ConversionError as exc:
            self.failed(record, str(exc))
            return None
        if not isinstance(value.value, dict):
            self.failed(record, "the value is not a struct (or a JSON object): it has no fields to write")
            return None
        schemas = _field_schemas(value)
        if settings.fields_whitelist:
            schemas = {n: s for n, s in schemas.items() if n in settings.fields_whitelist}
        row = {name: value.value.get(name) for name in schemas}
        pk = self._primary_key(record, key, row, schemas)
        if pk is None:
            return None
        return Change(record, table, pk, tuple(row.get(name) for name in pk), row, schemas)

    def _deletion(self, record: Record, table: str, key: Data | None) -> Change | None:
        if not self.settings.delete_enabled:
            self.failed(record, "a tombstone (null value) needs delete.enabled=true and pk.mode=record_key")
            return None
        if key is None:
            self.failed(record, "a tombstone without a key deletes nothing")
            return None
        row: dict[str, object] = {}
        pk = self._primary_key(record, key, row, {})
        return None if pk is None else Change(record, table, pk, tuple(row[n] for n in pk), None)

    def _primary_key(
        self, record: Record, key: Data | None, row: dict[str, object], schemas: dict[str, Schema]
    ) -> tuple[str, ...] | None:
        """The pk.mode's columns, with their values added to the row (and their schemas)."""
        mode, names = self.settings.pk_mode, self.settings.pk_fields
        if mode == "none":
            return ()
        if mode == "kafka":
            names = names or KAFKA_PK_FIELDS
            values = (record.topic, record.partition, record.offset)
            row.update(zip(names, values))
            schemas.update(zip(names, _KAFKA_SCHEMAS))
            return names
        if mode == "record_value":
            names = names or tuple(row)
            missing = [n for n in names if row.get(n) is None]
            if missing:
                self.failed(record, f"the value has no primary key field(s) {', '.join(missing)}")
                return None
            return names
        if key is None or key.value is None:
            self.failed(record, "pk.mode=record_key needs a key, and the record has none")
            return None
        if isinstance(key.value, dict):
            key_schemas = _field_schemas(key)
            names = names or tuple(key_schemas)
            row.update({n: key.value.get(n) for n in names})
            schemas.update({n: key_schemas[n] for n in names if n in key_schemas})
            return names
        if len(names) != 1:
            self.failed(
                record,
                "Need exactly one PK column defined since the key schema for records is a primitive type, "
                f"defined columns are: [{', '.join(names)}]",
            )
            return None
        row[names[0]] = key.value
        schemas[names[0]] = key.schema or types.value_schema(key.value)
        return names

    # -- tables --------------------------------------------------------------------------
    def _table(self, connection: Connection, name: str, changes: Sequence[Change]) -> Table | None:
        """The changes' table: reflected, created (auto.create) or given new columns (auto.evolve)."""
        if not inspect(connection).has_table(name):
            if not self.settings.auto_create:
                for change in changes:
                    self.failed(change.record, f'Table "{name}" is missing and auto-creation is disabled')
                return None
            pk = changes[0].pk
            columns = [
                Column(n, types.column_type(s), primary_key=n in pk, nullable=s.optional and n not in pk)
                for n, s in _all_schemas(changes).items()
            ]
            Table(name, MetaData(), *columns).create(connection)
        table = Table(name, MetaData(), autoload_with=connection)
        for change in changes:
            missing = [n for n in change.schemas if n not in table.c]
            if missing and not self.settings.auto_evolve:
                listed = ", ".join(missing)
                self.failed(
                    change.record, f"Table {name} is missing fields ({listed}) and auto-evolution is disabled"
                )
            elif missing:
                for column in missing:
                    self._add_column(connection, table, column, change)
                table = Table(name, MetaData(), autoload_with=connection)
        return table

    def _add_column(self, connection: Connection, table: Table, name: str, change: Change) -> None:
        schema = change.schemas[name]
        if not schema.optional:
            self.failed(
                change.record,
                f'Cannot ALTER TABLE "{table.name}" to add missing field {name}, as the field is not '
                "optional and does not have a default value",
            )
        column = Column(name, types.column_type(schema), nullable=True)
        spec = CreateColumn(column).compile(dialect=connection.dialect)
        quoted = connection.dialect.identifier_preparer.format_table(table)
        connection.exec_driver_sql(f"ALTER TABLE {quoted} ADD COLUMN {spec}")  # Core has no ALTER

    # -- statements ----------------------------------------------------------------------
    def _apply(self, connection: Connection, table: Table, changes: Sequence[Change], chunk: int) -> None:
        groups: dict[tuple[str, frozenset[str]], list[tuple[Change, dict[str, object]]]] = {}
        for change in changes:
            if change.row is None:
                groups.setdefault(("delete", frozenset()), []).append((change, _keyed(change)))
                continue
            try:
                params = types.row_fits(table, change.row, complete=self.settings.insert_mode != "update")
            except TypeError as exc:
                self.failed(change.record, str(exc))
                continue
            groups.setdefault((self.settings.insert_mode, frozenset(params)), []).append((change, params))
        for (operation, names), rows in groups.items():
            statement = self._statement(connection, table, operation, names, rows[0][0].pk)
            for at in range(0, len(rows), chunk):
                part = rows[at : at + chunk]
                values = [_update_params(p, part[0][0].pk) if operation == "update" else p for _, p in part]
                try:
                    connection.execute(statement, values)
                except DBAPIError as exc:
                    if len(part) == 1:
                        self.failed(part[0][0].record, " ".join(str(exc.orig).split()))
                    raise

    def _statement(
        self, connection: Connection, table: Table, operation: str, names: frozenset[str], pk: tuple[str, ...]
    ) -> Executable:
        if operation == "delete":
            return delete(table).where(and_(*[table.c[n] == bindparam(f"k_{n}") for n in pk]))
        if operation == "update":
            where = and_(*[table.c[n] == bindparam(f"k_{n}") for n in pk])
            return update(table).where(where).values({n: bindparam(f"v_{n}") for n in names if n not in pk})
        if operation == "insert" or not pk:
            return table.insert()
        statement = _dialect_insert(connection, table)
        others = {n: statement.excluded[n] for n in sorted(names) if n not in pk}
        if not others:
            return statement.on_conflict_do_nothing(index_elements=list(pk))
        return statement.on_conflict_do_update(index_elements=list(pk), set_=others)

    # -- the ledger ----------------------------------------------------------------------
    def _written(self, connection: Connection) -> dict[tuple[str, int], int]:
        ledger = self.ledger
        rows = connection.execute(
            select(ledger.c.topic, ledger.c.partition, ledger.c.next_offset).where(
                ledger.c.connector == self.settings.connector
            )
        )
        return {(topic, partition): offset for topic, partition, offset in rows}

    def _record_offsets(self, connection: Connection, records: Iterable[Record]) -> None:
        ends: dict[tuple[str, int], int] = {}
        for record in records:
            ends[(record.topic, record.partition)] = max(
                ends.get((record.topic, record.partition), 0), record.offset + 1
            )
        if not ends:
            return
        statement = _dialect_insert(connection, self.ledger)
        statement = statement.on_conflict_do_update(
            index_elements=["connector", "topic", "partition"],
            set_={"next_offset": statement.excluded.next_offset},
        )
        rows = [
            {"connector": self.settings.connector, "topic": t, "partition": p, "next_offset": o}
            for (t, p), o in ends.items()
        ]
        connection.execute(statement, rows)


def _dialect_insert(connection: Connection, table: Table) -> sqlite.Insert | postgresql.Insert:
    """The database's INSERT with ON CONFLICT (upserts)."""
    return (postgresql if connection.dialect.name == "postgresql" else sqlite).insert(table)


def _field_schemas(data: Data) -> dict[str, Schema]:
    """A struct's fields' schemas, or those of a schemaless JSON object's values."""
    if data.schema is not None and data.schema.type == "struct":
        return dict(data.schema.fields)
    assert isinstance(data.value, dict)
    return {name: types.value_schema(value) for name, value in data.value.items()}


def _all_schemas(changes: Iterable[Change]) -> dict[str, Schema]:
    found: dict[str, Schema] = {}
    for change in changes:
        for name, schema in change.schemas.items():
            found.setdefault(name, schema)
    return found


def _keyed(change: Change) -> dict[str, object]:
    return {f"k_{n}": v for n, v in zip(change.pk, change.key)}


def _update_params(row: Mapping[str, object], pk: tuple[str, ...]) -> dict[str, object]:
    return {**{f"k_{n}": row[n] for n in pk}, **{f"v_{n}": v for n, v in row.items() if n not in pk}}


def _names(listed: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in listed.split(",") if name.strip())
