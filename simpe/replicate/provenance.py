"""Which code each part of the replication and each row of its page depends on, and which rows are stale.

* a loop run: ``simpe.fingerprint.run_code`` of its config (the loop, its method, decoder, dataset and model family,
  the model's files), recorded in the run's env.json when it starts and kept in its record;
* a study (``STUDY_ROOTS``): the study's modules and what they import, the model's files, and for the systems study
  the code of the forgetting runs whose adapted states it ranks;
* the page's rows: the claim code (``CLAIM_ROOTS``: the claims, verdicts, the papers' figures, the records reader,
  the page) and, per part of the plan a row needs (``claims.NEEDS``), one fingerprint of that part's records.

``stale_rows`` compares what the page recorded with the code as it is now: a row is stale when a record it rests on
was made by other code than the current one would run (rerun that part), or when the page was judged by other claim
code or from other records (rebuild it with ``--report-only``). Nothing here runs a model.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from simpe.fingerprint import changed_files, code_of, fingerprint, run_code
from simpe.replicate.records import STUDY_FILES, Records, read_records, records_folder

STUDY_ROOTS = {
    "studies": ("simpe.replicate.studies", "simpe.datasets.libreoffice"),
    "penalties": ("simpe.replicate.penalties", "simpe.datasets.libreoffice"),
    "mbr-sensitivity": ("simpe.measure.sensitivity", "simpe.datasets.libreoffice"),
    "systems": ("simpe.measure.rank", "simpe.store.user", "simpe.datasets.libreoffice"),
}
CLAIM_ROOTS = ("simpe.replicate.claims", "simpe.replicate.page", "simpe.replicate.records", "simpe.replicate.provenance")


def study_code(part: str, model: str | Path | None = None, runs: dict[str, str] | None = None,
               dataset: str = "libreoffice") -> dict[str, Any]:
    """The code of a study (``{"fingerprint", "files"}``) on ``model`` (None: the demo model) and ``dataset``'s dev split;
    ``runs``: {run name: fingerprint} of the runs it reads."""
    from simpe.datasets import DATASETS

    roots = [r for r in STUDY_ROOTS[part] if not r.startswith("simpe.datasets.")]
    roots.append(DATASETS.get(dataset).__module__ if dataset in DATASETS else "simpe.datasets")
    return code_of(roots, model, {f"run:{name}": fp for name, fp in sorted((runs or {}).items())})


def claims_code() -> dict[str, Any]:
    return code_of(CLAIM_ROOTS)


def part_fingerprint(records: Records, part: str) -> str | None:
    """One fingerprint of the records behind a part of the plan (None when it has none)."""
    found = records.part_records(part)
    return fingerprint({name: str(code) for name, code, _ in found}) if found else None


def row_code(records: Records, parts: tuple[str, ...], claims: str) -> dict[str, str | None]:
    """What a row rests on: the claim code's fingerprint and each part's records' fingerprint."""
    return {"claims": claims, **{part: part_fingerprint(records, part) for part in parts}}


def row_fingerprint(code: dict[str, str | None]) -> str:
    """One fingerprint of what a row rests on (``row_code``)."""
    return fingerprint({k: str(v) for k, v in code.items()})


def _why(old: dict[str, str] | None, new: dict[str, str]) -> str:
    if old is None:
        return "no code table recorded"
    changed = changed_files(old, new)
    return ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "") if changed else "the same files"


def stale_records(records: Records, part: str) -> list[str]:
    """Why each record of a part is stale against the current code ("name: files changed"); empty when none is."""
    out = []
    if part in STUDY_FILES:
        record = records.studies.get(part)
        if record is None:
            return []
        settings = record.get("settings") or {}
        runs = {name.split("/")[-1].removesuffix(".json"): str(code) for name, code, _ in records.part_records("forgetting")}
        now = study_code(part, settings.get("model"), runs if part == "systems" else None, settings.get("dataset") or "libreoffice")
        if record.get("code") != now["fingerprint"]:
            out.append(f"{STUDY_FILES[part]}: {_why(records.code.get(str(record.get('code'))), now['files'])}")
        return out
    for item in records.runs.get(records.resolve(part), []):
        now = run_code(item.run.config)
        if item.code != now["fingerprint"]:
            out.append(f"{item.run.name}: {_why(records.code.get(str(item.code)), now['files'])}")
    return out


def stale_rows(records: Records, page: dict[str, Any], needs: dict[str, tuple[str, ...]]) -> tuple[list[str], int]:
    """One line per stale row of a page (its json), and the number of rows; the current claim code is computed here."""
    claims = claims_code()
    rows = page.get("rows") or {}
    old_claims = ((page.get("code") or {}).get("claims") or {}).get("files")
    cache: dict[str, list[str]] = {}
    lines = []
    for cid, row in rows.items():
        code = row.get("code") or {}
        reasons = []
        for part in needs.get(cid, ()):
            if part not in cache:
                cache[part] = stale_records(records, part)
            if cache[part]:
                reasons.append(f"the code changed since the {records.resolve(part)} records were made ({'; '.join(cache[part][:3])}"
                               f"{'; …' if len(cache[part]) > 3 else ''}): they await the next call that runs the part, "
                               f"`simpe replicate --only {records.resolve(part)}` or the from-scratch `make replicate`")
            elif code.get(part) != part_fingerprint(records, part):
                reasons.append(f"the page was judged from other {part} records: `simpe replicate --report-only`")
        if code.get("claims") != claims["fingerprint"]:
            reasons.append(f"the claim code changed ({_why(old_claims, claims['files'])}): `simpe replicate --report-only`")
        if reasons:
            lines.append(f"{cid}: stale: " + "; ".join(reasons))
    return lines, len(rows)


def awaiting_rows(page: dict[str, Any]) -> list[str]:
    """One line per row of a page (its json) that awaits data the next from-scratch call records (``judges.AWAITS``):
    current against the code, but judged on records that predate what it reads."""
    import re

    from simpe.replicate.claims import PROBES
    from simpe.replicate.judges import AWAITS

    out = []
    for cid, row in (page.get("rows") or {}).items():
        why = str(row.get("why") or "")
        if AWAITS in why and cid not in PROBES:  # a probe that judges rows again repeats their words
            out.append(f"{cid}: " + re.split(r" \| |\. ", why[why.index(AWAITS):])[0])
    return out


def status(out: Path, folder: Path | None = None) -> str:
    """``simpe replicate --status``: one line per row of page ``out`` that is stale against the current code (with the
    files that changed and the command that brings it up to date), and a line that counts them; then the rows that await
    data the next from-scratch call records, and their count."""
    import json

    from simpe.replicate.claims import NEEDS

    path = out.with_suffix(".json")
    try:
        page = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{path} is missing or not JSON: `simpe replicate --report-only` writes it from the records"
    folder = folder or records_folder(out)
    if "code" not in page:  # a page written before pages recorded what they rest on
        rows = list(page.get("rows") or {})
        return "\n".join([f"{cid}: stale: the page predates code fingerprints and records: `simpe replicate` (make replicate)"
                          for cid in rows] + [f"{len(rows)} of {len(rows)} rows stale against the code as it is now"])
    if not folder.is_dir():
        return f"no records folder {folder}: the page's rows cannot be checked; `simpe replicate` (make replicate) writes it"
    records = read_records(folder)
    lines, total = stale_rows(records, page, NEEDS)
    lines.append(f"{len(lines)} of {total} rows stale against the code as it is now" if lines
                 else f"all {total} rows are current: their records and the page were made by the code as it is now")
    waiting = awaiting_rows(page)
    if waiting:
        lines += waiting + [f"{len(waiting)} of {total} rows await data that the records predate (the next from-scratch "
                            "`make replicate` records it)"]
    return "\n".join(lines)
