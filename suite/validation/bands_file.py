"""The bands file: reading it (bounded, checked against the workloads' settings) and writing it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from suite.errors import validation_problems
from suite.files import FileProblem, read_yaml
from suite.launchers import launch_keys
from suite.rules import flatten_config
from suite.specs import SPECS_DIR, ConfigError, load_specs, resolve
from suite.validation.bands import BANDS_PATH, BANDS_VERSION, BandsError, BandsFile

BANDS_HEADER = """\
# trainbench reference bands (bands_version 1). Schema: suite/schemas/bands-v1.schema.json.
#
# A band: value, lower/upper as fractions of value (lower in [-1, 0], upper >= 0, null =
# unbounded), an optional absolute floor, the unit, the number of runs behind the value,
# the config conditions it applies to, and its source (a citation, or measured runs with
# their digests). Measured bands are written by `trainbench bands derive`; keep comments
# out of this file (it is rewritten), and put notes in each band's source.
"""


def _config_keys(specs_dir: Path) -> dict[str, set[str]]:
    """``spec name -> the flattened config keys`` of its default profile, plus the launch settings
    of every launcher (a band may pin a setting of a launcher other than the profile's)."""
    every_launch = {f"launch.{k}" for k in launch_keys()}
    out: dict[str, set[str]] = {}
    for name, spec in load_specs(specs_dir).items():
        out[name] = set(flatten_config(resolve(name, spec.default_profile, [], directory=specs_dir))) | every_launch
    return out


def check_conditions(bands: BandsFile, specs_dir: Path = SPECS_DIR) -> None:
    """Every band names a known workload and only settings that workload has.

    A misspelt condition would make a band silently apply to nothing, so it is an error.

    Raises:
        BandsError: an unknown workload or condition key (the message lists the valid ones).
    """
    try:
        keys = _config_keys(specs_dir)
    except ConfigError as exc:
        raise BandsError(f"cannot load the workload specs to check the bands: {exc}") from exc
    for band in bands.bands:
        if band.workload not in keys:
            raise BandsError(
                f"band {band.name!r}: unknown workload {band.workload!r}; valid: {', '.join(sorted(keys))}"
            )
        unknown = sorted(set(band.conditions) - keys[band.workload])
        if unknown:
            raise BandsError(
                f"band {band.name!r}: unknown condition key(s) {', '.join(unknown)}; valid keys: "
                f"{', '.join(sorted(keys[band.workload]))}"
            )


def parse_bands(raw: Any, where: str, specs_dir: Path = SPECS_DIR) -> BandsFile:
    """Check already-loaded YAML content as a bands file.

    Raises:
        BandsError: the content does not fit :class:`BandsFile`, or names unknown
            workloads or settings.
    """
    if not isinstance(raw, dict):
        raise BandsError(f"{where}: a bands file must be a mapping with bands_version and bands")
    if raw.get("bands_version") != BANDS_VERSION:
        raise BandsError(
            f"{where}: bands_version {raw.get('bands_version')!r} is not supported; this trainbench reads "
            f"bands_version {BANDS_VERSION}"
        )
    try:
        bands = BandsFile.model_validate(raw)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise BandsError(f"{where}: invalid bands file: {problems}") from exc
    try:
        check_conditions(bands, specs_dir)
    except BandsError as exc:
        raise BandsError(f"{where}: {exc}") from exc
    return bands


def load_bands(path: Path = BANDS_PATH, specs_dir: Path = SPECS_DIR) -> BandsFile:
    """Read the bands file (bounded, strict YAML: :mod:`suite.files`) and check it.

    Raises:
        BandsError: missing, not a regular file, oversized or unparseable file (aliases, merge
            keys and duplicate keys included), or invalid content.
    """
    if not path.exists() and not path.is_symlink():
        raise BandsError(f"{path}: no bands file; pass --bands FILE (the committed one is submissions/bands.yaml)")
    try:
        raw = read_yaml(path)
    except FileProblem as exc:
        raise BandsError(f"{path}: cannot read the bands file: {exc.message}; {exc.fix}") from exc
    return parse_bands(raw, str(path), specs_dir)


def write_bands(bands: BandsFile, path: Path) -> Path:
    """Write the bands file as YAML (with :data:`BANDS_HEADER`), atomically; returns ``path``."""
    body = yaml.safe_dump(
        bands.model_dump(mode="json", exclude_none=False), sort_keys=False, allow_unicode=True, width=100
    )
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(BANDS_HEADER + body)
    tmp.replace(path)
    return path
