"""``mlflow``: a run as an MLflow run, in a local file store beside the run (default) or at a tracking URI.

The experiment is the run's group (its folder name, ``<dataset>-<split>--<model>--<N>seg``), the MLflow run is named
after the preset. Logged through ``MlflowClient`` with explicit run ids (no active-run state) and ``log_batch``:
the config as parameters (dotted keys; values cut to MLflow's limit), every figure of ``simpe.track.extract`` as
metric history (step = the segment index ...), the signatures and the run's identity as tags, and config.yaml,
summary.json and env.json as artifacts under ``run/``. The run's start and end are when its config.yaml and its
DONE were written; every point carries the end as its timestamp.

The default store is MLflow's file store, ``file://<group folder>/mlruns``: mlflow-skinny has no database backend
(that needs SQLAlchemy and Alembic), and MLflow 3's file store, in maintenance mode, refuses to open unless
``MLFLOW_ALLOW_FILE_STORE`` is true, which this tracker sets while it writes to a file store (docs/tracking.md:
reading it with ``mlflow ui`` needs it too).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError
from simpe.rundir.layout import CONFIG_FILE, ENV_FILE, SUMMARY_FILE
from simpe.rundir.reader import Run
from simpe.track.base import MLFLOW_DIR, TRACKERS, Tracker, require
from simpe.track.extract import params, points, run_digest, tags, times

ALLOW_FILE_STORE = "MLFLOW_ALLOW_FILE_STORE"
ARTIFACTS = (CONFIG_FILE, SUMMARY_FILE, ENV_FILE)
ARTIFACT_DIR = "run"
FINISHED = "FINISHED"
PROBE_SECONDS = 10  # how long a tracking server may take to answer the probe

logger = logging.getLogger(__name__)


def default_uri(run: Run) -> str:
    """The file store of the run's group folder: ``file:///…/<group>/mlruns``."""
    return (Path(run.path).parent / MLFLOW_DIR).resolve().as_uri()


def is_file_store(uri: str) -> bool:
    """An MLflow file store: a ``file:`` URI, or a plain path (MLflow reads one as a folder)."""
    return uri.startswith("file:") or "://" not in uri and not uri.startswith(("sqlite:", "databricks", "postgresql", "mysql"))


@contextmanager
def environment(values: dict[str, str], replace: bool = False) -> Iterator[None]:
    """``values`` in the environment while the block runs (only those not set already, unless ``replace``), then the
    environment as it was: MLflow reads its settings from there."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update({key: value for key, value in values.items() if replace or before[key] is None})
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def file_store_allowed(uri: str) -> Any:
    """While writing to a file store: MLflow's opt-in to it (``MLFLOW_ALLOW_FILE_STORE``), unless the user set it."""
    return environment({ALLOW_FILE_STORE: "true"} if is_file_store(uri) else {})


def _limits() -> dict[str, int]:
    """MLflow's limits on names, values and batches (its own constants, where this version has them)."""
    known = {"MAX_PARAM_VAL_LENGTH": 6000, "MAX_TAG_VAL_LENGTH": 8000, "MAX_ENTITY_KEY_LENGTH": 250,
             "MAX_PARAMS_TAGS_PER_BATCH": 100, "MAX_METRICS_PER_BATCH": 1000}
    try:
        from mlflow.utils import validation
    except ImportError:  # pragma: no cover - every mlflow 3 has it
        return known
    return {name: int(getattr(validation, name, default)) for name, default in known.items()}


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


@TRACKERS.add("mlflow")
class MlflowTracker(Tracker):
    """Logs runs to MLflow: ``uri`` a tracking URI (``http://host:5000``, ``file:///path``), default the file store
    ``<group folder>/mlruns`` of each run."""

    def __init__(self, uri: str | None = None) -> None:
        self.uri = uri
        require("mlflow", "mlflow")
        if uri and not is_file_store(uri):
            self._probe(uri)

    @staticmethod
    def _probe(uri: str) -> None:
        """Refuse, in one line and within seconds, a tracking server that does not answer: before any run, not after
        hours of simulation and minutes of MLflow's retries."""
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        try:
            with environment({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": str(PROBE_SECONDS)}, replace=True):
                MlflowClient(tracking_uri=uri).search_experiments(max_results=1)
        except MlflowException as err:
            message = " ".join(str(err).split())
            raise ConfigError(f"mlflow at {uri} cannot be used ({message[:300]}); check the tracking URI") from None

    def log(self, run: Run) -> str:
        from mlflow.exceptions import MlflowException

        uri = self.uri or default_uri(run)
        with file_store_allowed(uri):
            try:
                return self._log(run, uri)
            except MlflowException as err:
                message = " ".join(str(err).split())
                raise ConfigError(f"mlflow at {uri}: {message[:400]}") from None

    def _log(self, run: Run, uri: str) -> str:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        experiment = run.path.parent.name
        experiment_id = self._experiment(client, experiment)
        digest, run_path = run_digest(run.path), str(Path(run.path).resolve())
        earlier = [found for found in self._runs(client, experiment_id) if found.data.tags.get("simpe.run_path") == run_path]
        for found in earlier:
            if found.data.tags.get("simpe.run_digest") == digest and found.info.status == FINISHED:
                return f"{run.name} is logged already (run {found.info.run_id} of experiment {experiment} at {uri}); skipped"
        for found in earlier:  # made again since, or logged only in part: its entry goes
            client.delete_run(found.info.run_id)
        start, end = times(run)
        run_id = client.create_run(experiment_id, start_time=int(start * 1000), run_name=run.name).info.run_id
        counts = self._log_batches(client, run, run_id, digest, int(end * 1000))
        self._log_artifacts(client, run, run_id)
        client.set_terminated(run_id, FINISHED, end_time=int(end * 1000))
        replaced = f"; replaced {', '.join(found.info.run_id for found in earlier)}" if earlier else ""
        return (f"{run.name}: {counts[0]} points, {counts[1]} parameters, {counts[2]} tags -> run {run_id} of experiment "
                f"{experiment} at {uri}{replaced}")

    @staticmethod
    def _experiment(client: Any, name: str) -> str:
        """The id of experiment ``name``, created (or restored from the trash) when needed."""
        from mlflow.exceptions import MlflowException

        found = client.get_experiment_by_name(name)
        if found is None:
            try:
                return str(client.create_experiment(name))
            except MlflowException:  # created by another process meanwhile
                found = client.get_experiment_by_name(name)
                if found is None:
                    raise
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        return str(found.experiment_id)

    @staticmethod
    def _runs(client: Any, experiment_id: str) -> list[Any]:
        """Every active run of the experiment (page after page)."""
        runs: list[Any] = []
        token = None
        while True:
            page = client.search_runs([experiment_id], max_results=1000, page_token=token)
            runs += list(page)
            token = page.token
            if not token:
                return runs

    @staticmethod
    def _log_batches(client: Any, run: Run, run_id: str, digest: str, timestamp: int) -> tuple[int, int, int]:
        """Parameters, tags and metrics in batches of MLflow's sizes; (metric points, parameters, tags) logged."""
        from mlflow.entities import Metric, Param, RunTag

        limits = _limits()
        key_limit = limits["MAX_ENTITY_KEY_LENGTH"]
        given = params(run.config)
        kept = {key: value for key, value in given.items() if len(key) <= key_limit}
        for key in sorted(set(given) - set(kept)):
            logger.warning("config key %s is longer than MLflow's %d characters; not logged", key, key_limit)
        param_list = [Param(key, value[: limits["MAX_PARAM_VAL_LENGTH"]]) for key, value in kept.items()]
        tag_list = [RunTag(key, value[: limits["MAX_TAG_VAL_LENGTH"]]) for key, value in tags(run, digest).items()]
        metric_list = [Metric(point.name, point.value, timestamp, point.step) for point in points(run)]
        batch = limits["MAX_PARAMS_TAGS_PER_BATCH"]
        for chunk in _chunks(param_list, batch):
            client.log_batch(run_id, params=chunk)
        for chunk in _chunks(tag_list, batch):
            client.log_batch(run_id, tags=chunk)
        for chunk in _chunks(metric_list, limits["MAX_METRICS_PER_BATCH"]):
            client.log_batch(run_id, metrics=chunk)
        return len(metric_list), len(param_list), len(tag_list)

    @staticmethod
    def _log_artifacts(client: Any, run: Run, run_id: str) -> None:
        """config.yaml, summary.json and env.json under ``run/``; a store that takes no artifacts is only warned about."""
        for name in ARTIFACTS:
            file = Path(run.path) / name
            if not file.is_file():
                continue
            try:
                client.log_artifact(run_id, str(file), ARTIFACT_DIR)
            except Exception as err:  # an artifact store this machine cannot write (credentials): the run is logged
                logger.warning("mlflow: %s of %s not stored as an artifact (%s: %s)", name, run.name, type(err).__name__, err)
