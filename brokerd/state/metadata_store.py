"""The metadata log as the state directory keeps it (`metadata/`, see brokerd.metadata):
opening it, reading it, and writing metadata records under the write lock.

Every writer goes through ``_writing``: under the write lock, caught up with the log, and,
for a controller, fenced by its controller epoch before anything is appended. Each record is
stamped with that controller epoch (None for what any broker writes: a leader's ISR change,
a config change) and the time, which `kctl cluster metadata` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from brokerd.metadata import records as metadata_records
from brokerd.metadata.editor import TopicsEditor, config_records, topic_records
from brokerd.metadata.image import MetadataDelta, MetadataImage, TopicImage
from brokerd.metadata.log import MetadataLog, Observer
from brokerd.state.controller_epoch import check_controller_epoch
from brokerd.state.directory import StateDirectory, read_json

LEGACY_METADATA = "metadata.json"


def upgrade_legacy_metadata(state_dir: Path, log_dir: Path) -> None:
    """Create the metadata log, from `metadata.json` when the cluster is older than the log.

    Its topics become TopicRecords and PartitionRecords and its dynamic broker configs
    ConfigRecords, stamped with its controller epoch and written to a temporary directory
    that is renamed into place, so the log appears whole or not at all.
    """
    legacy = state_dir / LEGACY_METADATA
    doc = read_json(legacy, {"topics": {}})
    upgraded = [
        record for topic in doc["topics"].values() for record in topic_records(TopicImage.from_json(topic))
    ]
    for entity, configs in doc.get("broker_configs", {}).items():
        upgraded += config_records(metadata_records.BROKER_RESOURCE, entity, {}, configs)
    tmp = log_dir.with_name(".metadata.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    MetadataLog(tmp).append(upgraded, doc.get("controller_epoch"))
    tmp.rename(log_dir)  # the log appears whole, or not at all
    legacy.unlink(missing_ok=True)


class MetadataStore(StateDirectory):
    def __init__(self, cluster_dir: Path, member: int | None = None):
        super().__init__(cluster_dir, member)
        self._metadata_log: MetadataLog | None = None

    def _open_metadata_log(self) -> MetadataLog:
        """The metadata log, created on first use (upgrading a `metadata.json`) under the
        write lock; this object then keeps reading it from where it stopped."""
        if self._metadata_log is None:
            log = MetadataLog(self.dir / "metadata")
            if not log.exists():
                with self.write_lock():
                    if not log.exists():
                        upgrade_legacy_metadata(self.dir, log.dir)
            self._metadata_log = log
        return self._metadata_log

    # -- reading ----------------------------------------------------------------------------
    def metadata_image(self) -> MetadataImage:
        """The metadata as of the last record written (reads only what is new since the last
        call; an image never changes, later calls return new ones)."""
        return self._open_metadata_log().catch_up()

    def topics(self) -> Mapping[str, TopicImage]:
        return self.metadata_image().topics

    def take_metadata_delta(self) -> MetadataDelta:
        """What changed since the last call (everything, the first time), applied: the image
        is the delta's; nothing while the broker cannot reach the quorum: it goes on with
        the metadata it has."""
        if not self.reaches_quorum():
            held = MetadataImage() if self._metadata_log is None else self._metadata_log.image
            return MetadataDelta(held)
        log = self._open_metadata_log()
        log.catch_up()
        return log.take_delta()

    def follow_metadata(self, observer: Observer) -> Callable[[], None]:
        """Follow the metadata log record by record (for `kctl cluster metadata`): returns a
        function that tells ``observer`` of every record written since its last call, with
        the image as it was before the record, starting from the newest snapshot."""
        log = MetadataLog(self.dir / "metadata", observer)

        def tell_new_records() -> None:
            log.catch_up()

        return tell_new_records

    # -- writing ----------------------------------------------------------------------------
    @contextmanager
    def _writing(self, controller_epoch: int | None) -> Iterator[MetadataLog]:
        """The metadata log, caught up, under the write lock; a controller's write is fenced:
        one from an epoch below the current controller's raises StaleControllerEpoch."""
        with self.write_lock():
            if controller_epoch is not None:
                check_controller_epoch(self.dir, controller_epoch)
            log = self._open_metadata_log()
            log.catch_up()
            yield log

    @contextmanager
    def _editing(self, controller_epoch: int | None) -> Iterator[TopicsEditor]:
        """The topics to change, as copies (see TopicsEditor); on exit, the records of what
        changed are appended, and nothing at all when nothing changed."""
        with self._writing(controller_epoch) as log:
            editor = TopicsEditor(log.image)
            yield editor
            log.append(editor.records(), controller_epoch)
