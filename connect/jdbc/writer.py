"""JdbcSinkConnector's writing of a batch of records into tables, in one transaction, as
Confluent's JdbcDbWriter does it (insert, upsert or update; tombstones delete with
delete.enabled; auto.create and auto.evolve), and exactly once: the next offset of every
partition a batch came from is kept in `__kctl_connect_offsets` in the same transaction, so
records of a batch written before a crash are skipped when Spark replays it.

Within a batch only the last record of each primary key is written, so a batch is a set of
changes to distinct rows and their order does not matter. A record that cannot be converted
or written is handed to the caller's `Rejected` (`_reject` is the one place that does), which
fails the task (`fail`, the default) or reports and skips it (Connect's error handling, in the
sink). The database's refusal of a batch is traced to its records by writing them again one
at a time, each in a savepoint, inside the same transaction; a refusal that is not a record's
(a lost connection) fails the task whatever the caller decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
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
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from sqlalchemy.schema import CreateColumn
from sqlalchemy.sql import Executable

from connect.converters import ConversionError, Converter, Data, Schema
from connect.jdbc import types

LEDGER = "__kctl_connect_offsets"
KAFKA_PK_FIELDS = ("__connect_topic", "__connect_partition", "__connect_offset")
_KAFKA_SCHEMAS = (Schema("string"), Schema("int32"), Schema("int64"))
SINK_TASK = "io.confluent.connect.jdbc.sink.JdbcSinkTask"  # what Connect names as failing a put
TASK_PUT = "TASK_PUT"
CONNECT_EXCEPTION = "org.apache.kafka.connect.errors.ConnectException"
SQL_EXCEPTION = "java.sql.SQLException"

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()

    def where(self) -> str:
        key = None if self.key is None else self.key.decode(errors="replace")
        return f"topic={self.topic} partition={self.partition} offset={self.offset} key={key}"


class RecordFailed(RuntimeError):
    """A record the sink cannot write, named by its message; `connect_class` is the class of
    Connect's error it stands for (as a dead letter's headers name it)."""

    def __init__(self, message: str, connect_class: str) -> None:
        super().__init__(message)
        self.connect_class = connect_class


class _Refused(Exception):
    """Why one record cannot be written, raised where it is found and caught where the record
    is dropped, so a refusal reaches `_reject` once."""

    def __init__(
        self,
        reason: str,
        stage: str = TASK_PUT,
        class_name: str = SINK_TASK,
        connect_class: str = CONNECT_EXCEPTION,
    ) -> None:
        super().__init__(reason)
        self.stage, self.class_name, self.connect_class = stage, class_name, connect_class


@dataclass(frozen=True)
class Rejection:
    """A record the writer skipped, and why: Connect's stage and class, and the error."""

    record: Record
    stage: str  # KEY_CONVERTER, VALUE_CONVERTER or TASK_PUT
    class_name: str  # the converter's class, or the sink task's
    error: RecordFailed


Rejected = Callable[[Rejection], None]


def fail(rejection: Rejection) -> None:
    """errors.tolerance=none without Connect's error handler: the task fails, naming the record."""
    raise rejection.error


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

    def transaction(self) -> AbstractContextManager[Connection]:
        """A batch's transaction: committed when the block ends without an error, so whatever
        the caller does at the end of the block (its dead letters) happens before the commit."""
        return self.engine.begin()

    def write(self, connection: Connection, records: Sequence[Record], rejected: Rejected = fail) -> None:
        """The records a replayed batch did not yet write, with their partitions' next offsets;
        those that cannot be written go to `rejected` in offset order, and are skipped if it
        returns (it raises to fail the batch)."""
        ordered = sorted(records, key=_position)
        self.ledger.create(connection, checkfirst=True)
        written = self._written(connection)
        refused: list[Rejection] = []
        latest: dict[tuple[object, ...], Change] = {}
        for record in ordered:
            if record.offset < written.get((record.topic, record.partition), 0):
                continue
            try:
                change = self._change(record)
            except _Refused as refusal:
                _reject(refused.append, record, refusal)
                continue
            identity = change.key if change.pk else (record.topic, record.partition, record.offset)
            latest.pop((change.table, *identity), None)  # the later record replaces it
            latest[(change.table, *identity)] = change
        by_table: dict[str, list[Change]] = {}
        for change in latest.values():
            by_table.setdefault(change.table, []).append(change)
        groups: list[_Group] = []
        for name, changes in by_table.items():
            table, fitting = self._table(connection, name, changes, refused.append)
            if table is not None:
                groups.extend(self._groups(connection, table, fitting, refused.append))
        self._execute(connection, groups, refused.append)
        for rejection in sorted(refused, key=lambda r: _position(r.record)):
            rejected(rejection)
        self._record_offsets(connection, ordered)

    # -- records into changes ------------------------------------------------------------
    def _change(self, record: Record) -> Change:
        settings = self.settings
        table = settings.table_format.replace("${topic}", record.topic)
        key = self._converted(record.key, self.key_converter, "KEY_CONVERTER")
        if record.value is None:
            return self._deletion(record, table, key)
        value = self._converted(record.value, self.value_converter, "VALUE_CONVERTER")
        if value is None or not isinstance(value.value, dict):
            raise _Refused("the value is not a struct (or a JSON object): it has no fields to write")
        schemas = _field_schemas(value)
        if settings.fields_whitelist:
            schemas = {n: s for n, s in schemas.items() if n in settings.fields_whitelist}
        row = {name: value.value.get(name) for name in schemas}
        pk = self._primary_key(record, key, row, schemas)
        return Change(record, table, pk, tuple(row.get(name) for name in pk), row, schemas)

    @staticmethod
    def _converted(data: bytes | None, converter: Converter, stage: str) -> Data | None:
        if data is None:
            return None
        try:
            return converter.to_data(data)
        except ConversionError as exc:
            raise _Refused(str(exc), stage, converter.class_name, exc.connect_class) from exc

    def _deletion(self, record: Record, table: str, key: Data | None) -> Change:
        if not self.settings.delete_enabled:
            raise _Refused("a tombstone (null value) needs delete.enabled=true and pk.mode=record_key")
        if key is None:
            raise _Refused("a tombstone without a key deletes nothing")
        row: dict[str, object] = {}
        pk = self._primary_key(record, key, row, {})
        return Change(record, table, pk, tuple(row[n] for n in pk), None)

    def _primary_key(
        self, record: Record, key: Data | None, row: dict[str, object], schemas: dict[str, Schema]
    ) -> tuple[str, ...]:
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
                raise _Refused(f"the value has no primary key field(s) {', '.join(missing)}")
            return names
        if key is None or key.value is None:
            raise _Refused("pk.mode=record_key needs a key, and the record has none")
        if isinstance(key.value, dict):
            key_schemas = _field_schemas(key)
            names = names or tuple(key_schemas)
            row.update({n: key.value.get(n) for n in names})
            schemas.update({n: key_schemas[n] for n in names if n in key_schemas})
            return names
        if len(names) != 1:
            raise _Refused(
                "Need exactly one PK column defined since the key schema for records is a primitive type, "
                f"defined columns are: [{', '.join(names)}]"
            )
        row[names[0]] = key.value
        schemas[names[0]] = key.schema or types.value_schema(key.value)
        return names

    # -- tables --------------------------------------------------------------------------
    def _table(
        self, connection: Connection, name: str, changes: Sequence[Change], rejected: Rejected
    ) -> tuple[Table | None, list[Change]]:
        """The changes' table, reflected, created (auto.create) or given new columns
        (auto.evolve), and the changes that fit its columns."""
        if not inspect(connection).has_table(name):
            if not self.settings.auto_create:
                for change in changes:
                    refused = _Refused(f'Table "{name}" is missing and auto-creation is disabled')
                    _reject(rejected, change.record, refused)
                return None, []
            pk = changes[0].pk
            columns = [
                Column(n, types.column_type(s), primary_key=n in pk, nullable=s.optional and n not in pk)
                for n, s in _all_schemas(changes).items()
            ]
            Table(name, MetaData(), *columns).create(connection)
        table = Table(name, MetaData(), autoload_with=connection)
        fitting: list[Change] = []
        for change in changes:
            missing = [n for n in change.schemas if n not in table.c]
            try:
                if missing and not self.settings.auto_evolve:
                    listed = ", ".join(missing)
                    raise _Refused(
                        f"Table {name} is missing fields ({listed}) and auto-evolution is disabled"
                    )
                for column in missing:
                    self._add_column(connection, table, column, change)
            except _Refused as refused:
                _reject(rejected, change.record, refused)
                continue
            if missing:
                table = Table(name, MetaData(), autoload_with=connection)
            fitting.append(change)
        return table, fitting

    def _add_column(self, connection: Connection, table: Table, name: str, change: Change) -> None:
        schema = change.schemas[name]
        if not schema.optional:
            raise _Refused(
                f'Cannot ALTER TABLE "{table.name}" to add missing field {name}, as the field is not '
                "optional and does not have a default value"
            )
        column = Column(name, types.column_type(schema), nullable=True)
        spec = CreateColumn(column).compile(dialect=connection.dialect)
        quoted = connection.dialect.identifier_preparer.format_table(table)
        connection.exec_driver_sql(f"ALTER TABLE {quoted} ADD COLUMN {spec}")  # Core has no ALTER

    # -- statements ----------------------------------------------------------------------
    def _groups(
        self, connection: Connection, table: Table, changes: Sequence[Change], rejected: Rejected
    ) -> list[_Group]:
        """The changes as statements, each with the parameters of the changes it runs for."""
        grouped: dict[tuple[str, frozenset[str]], list[tuple[Change, dict[str, object]]]] = {}
        for change in changes:
            if change.row is None:
                grouped.setdefault(("delete", frozenset()), []).append((change, _keyed(change)))
                continue
            try:
                params = types.row_fits(table, change.row, complete=self.settings.insert_mode != "update")
            except TypeError as exc:
                _reject(rejected, change.record, _Refused(str(exc)))
                continue
            grouped.setdefault((self.settings.insert_mode, frozenset(params)), []).append((change, params))
        groups = []
        for (operation, names), rows in grouped.items():
            pk = rows[0][0].pk
            if operation == "update":
                rows = [(change, _update_params(params, pk)) for change, params in rows]
            groups.append(_Group(self._statement(connection, table, operation, names, pk), rows))
        return groups

    def _execute(self, connection: Connection, groups: Sequence[_Group], rejected: Rejected) -> None:
        """The statements, batch.size rows at a time; if the database refuses them, again a
        row at a time, each in a savepoint, to find and skip the records it refuses."""
        chunk = self.settings.batch_size
        try:
            with connection.begin_nested():
                for group in groups:
                    for at in range(0, len(group.rows), chunk):
                        connection.execute(group.statement, [p for _, p in group.rows[at : at + chunk]])
        except DBAPIError as exc:
            if not _records_fault(exc):
                raise
            for group in groups:
                for change, params in group.rows:
                    try:
                        with connection.begin_nested():
                            connection.execute(group.statement, [params])
                    except DBAPIError as refused:
                        if not _records_fault(refused):
                            raise
                        refusal = _Refused(" ".join(str(refused.orig).split()), connect_class=SQL_EXCEPTION)
                        refusal.__cause__ = refused
                        _reject(rejected, change.record, refusal)

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


@dataclass(frozen=True)
class _Group:
    """One statement and the changes it runs for, with their parameters."""

    statement: Executable
    rows: list[tuple[Change, dict[str, object]]]


def _position(record: Record) -> tuple[str, int, int]:
    return record.topic, record.partition, record.offset


def _reject(rejected: Rejected, record: Record, refused: _Refused) -> None:
    """The one place a record that cannot be written is decided on: by the caller."""
    error = RecordFailed(f"cannot write the record at {record.where()}: {refused}", refused.connect_class)
    error.__cause__ = refused.__cause__ or refused
    rejected(Rejection(record, refused.stage, refused.class_name, error))


def _records_fault(error: DBAPIError) -> bool:
    """A refusal a record caused (a constraint, a value the column cannot hold), not the
    connection's or the database's: those fail the task whatever the error tolerance."""
    return isinstance(error, IntegrityError | DataError) and not error.connection_invalidated


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
