"""The versioned price table: instance prices in USD per hour, each with its source and date.

The table is packaged at ``suite/data/prices.yaml``; every entry names its provider,
service, instance type, region (or none stated), pricing model (on-demand or spot),
price in USD per instance-hour, the month of its source, and the source itself. It is
read with the bounded reader (:mod:`suite.files`) and checked by a pydantic model.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from suite.errors import BadInput
from suite.files import FileProblem, parse_yaml, read_config_text

#: The price table shipped with trainbench.
DEFAULT_PRICE_TABLE_PATH: Path = Path(__file__).resolve().parent.parent / "data" / "prices.yaml"

#: Price-table format versions this module can read.
SUPPORTED_TABLE_VERSIONS: tuple[int, ...] = (1,)

#: Pricing models a price-table entry may have.
Pricing = Literal["on-demand", "spot"]
PRICINGS: tuple[str, ...] = ("on-demand", "spot")


class PriceTableError(BadInput, ValueError):
    """A price table is malformed, or a price cannot be chosen from it unambiguously."""


def _check_table_version(version: object) -> int:
    """Return ``version`` if this module can read tables of that version; raise ``ValueError`` otherwise."""
    supported = ", ".join(str(v) for v in SUPPORTED_TABLE_VERSIONS)
    if isinstance(version, bool) or not isinstance(version, int):
        # ValueError, not TypeError: pydantic turns only ValueError/AssertionError from validators into
        # ValidationError, and PriceTableError (the load-time wrapper) is a ValueError too.
        raise ValueError(f"table_version must be an integer (supported: {supported}), got {version!r}")
    if version not in SUPPORTED_TABLE_VERSIONS:
        raise ValueError(
            f"unsupported table_version {version}; this version of trainbench reads table_version {supported}"
        )
    return version


class PriceEntry(BaseModel):
    """One instance price, with where it came from.

    ``usd_per_hour`` is US dollars per instance-hour. ``region`` is ``None`` where the source does
    not state one. ``date`` is the month of the source, ``YYYY-MM``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(min_length=1, description="Cloud provider, e.g. 'aws'.")
    service: str = Field(min_length=1, description="Service the price is for, e.g. 'ec2' or 'sagemaker'.")
    instance_type: str = Field(min_length=1, description="Instance type as the provider names it.")
    region: str | None = Field(description="Region of the price; null where the source does not state one.")
    pricing: Pricing = Field(description="Pricing model: 'on-demand' or 'spot'.")
    usd_per_hour: float = Field(gt=0, allow_inf_nan=False, strict=True, description="Price in USD per hour.")
    date: str = Field(pattern=r"^\d{4}-(0[1-9]|1[0-2])$", description="Month of the source, YYYY-MM.")
    source: str = Field(min_length=1, description="Citation of the source of the price.")
    note: str | None = Field(default=None, description="Caveats: derived figures, unstated region, ...")


class PriceTable(BaseModel):
    """A versioned table of instance prices (all in ``currency`` per hour)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    table_version: int = Field(description="Format version of the table.")
    currency: Literal["USD"] = Field(description="Currency of every price in the table.")
    entries: list[PriceEntry] = Field(min_length=1, description="The prices.")

    @field_validator("table_version", mode="before")
    @classmethod
    def _supported_version(cls, value: object) -> int:
        return _check_table_version(value)

    @model_validator(mode="after")
    def _no_duplicates(self) -> PriceTable:
        seen: set[tuple[str, str, str, str | None, str]] = set()
        for entry in self.entries:
            key = (entry.provider, entry.service, entry.instance_type, entry.region, entry.pricing)
            if key in seen:
                region = entry.region if entry.region is not None else "region not stated"
                raise ValueError(
                    f"duplicate entry for {entry.provider} {entry.service} {entry.instance_type} "
                    f"({entry.pricing}, {region})"
                )
            seen.add(key)
        return self

    def instance_types(self) -> list[str]:
        """Return the instance types in the table, sorted, without repeats."""
        return sorted({e.instance_type for e in self.entries})


def _describe_loc(loc: tuple[int | str, ...], data: Mapping[str, Any]) -> str:
    """Render a pydantic error location as ``entries[3] (c7i.2xlarge).usd_per_hour``."""
    parts: list[str] = []
    for i, item in enumerate(loc):
        if isinstance(item, int):
            label = f"[{item}]"
            if i == 1 and loc[0] == "entries":
                entries = data.get("entries")
                if isinstance(entries, list) and item < len(entries) and isinstance(entries[item], Mapping):
                    name = entries[item].get("instance_type")
                    if isinstance(name, str):
                        label += f" ({name})"
            parts.append(label)
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts) or "(top level)"


def _format_validation_error(exc: ValidationError, data: Mapping[str, Any]) -> str:
    """Turn a pydantic ``ValidationError`` into one line per problem."""
    lines = []
    for err in exc.errors():
        where = _describe_loc(tuple(err["loc"]), data)
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        if "input" in err and err["type"] != "missing":
            got = err["input"]
            if not isinstance(got, (dict, list)):
                msg += f" (got {got!r})"
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def load_price_table(path: Path | None = None) -> PriceTable:
    """Load and validate a price table.

    Args:
        path: YAML file to read; ``None`` reads the packaged ``suite/data/prices.yaml``.

    Returns:
        The validated table. Prices are USD per hour.

    Raises:
        PriceTableError: the file cannot be read, is not YAML, is not a mapping, has an unsupported
            ``table_version`` or an invalid entry. The message names the file and the problem.
    """
    path = DEFAULT_PRICE_TABLE_PATH if path is None else Path(path)
    try:
        text = read_config_text(path)
    except FileProblem as exc:
        raise PriceTableError(f"cannot read price table {path}: {exc.message}; {exc.fix}") from exc
    try:
        data = parse_yaml(text)
    except FileProblem as exc:
        raise PriceTableError(f"price table {path} is not valid YAML: {exc.message}; {exc.fix}") from exc
    if not isinstance(data, dict):
        raise PriceTableError(
            f"price table {path} must be a YAML mapping with keys table_version, currency and entries; "
            f"got {type(data).__name__}"
        )
    # Check the version first: a table of another version may differ in every other field, and its
    # per-field errors would only hide the real problem.
    if "table_version" not in data:
        raise PriceTableError(f"price table {path}: table_version is missing (supported: {SUPPORTED_TABLE_VERSIONS})")
    try:
        _check_table_version(data["table_version"])
    except ValueError as exc:
        raise PriceTableError(f"price table {path}: {exc}") from exc
    try:
        return PriceTable.model_validate(data)
    except ValidationError as exc:
        raise PriceTableError(
            f"price table {path} is invalid ({exc.error_count()} problem(s)):\n{_format_validation_error(exc, data)}"
        ) from exc


def _known_prices(table: PriceTable) -> str:
    """Describe the table as ``c7i.2xlarge (on-demand, spot), g5.2xlarge (on-demand), ...``."""
    by_type: dict[str, list[str]] = {}
    for entry in table.entries:
        pricings = by_type.setdefault(entry.instance_type, [])
        if entry.pricing not in pricings:
            pricings.append(entry.pricing)
    return ", ".join(f"{name} ({', '.join(sorted(p))})" for name, p in sorted(by_type.items()))


def lookup(table: PriceTable, instance_type: str, pricing: str = "on-demand", region: str | None = None) -> PriceEntry:
    """Find the price of ``instance_type`` under ``pricing`` (and ``region``, if given).

    With ``region=None`` entries of any region match; with a region only entries for exactly that
    region match (an entry whose source states no region does not match a named region).

    Raises:
        PriceTableError: nothing matches (the message lists the known instance types and pricings),
            or more than one entry matches (the message asks for ``--region``).
    """
    name = instance_type.strip()
    matches = [
        e
        for e in table.entries
        if e.instance_type == name and e.pricing == pricing and (region is None or e.region == region)
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        where = f" in region {region}" if region is not None else ""
        msg = f"no {pricing} price for instance type {name!r}{where} in the price table."
        same = [e for e in table.entries if e.instance_type == name and e.pricing == pricing]
        if region is not None and same:
            regions = ", ".join(sorted(e.region if e.region is not None else "not stated" for e in same))
            msg += f" Regions known for it: {regions}"
            if any(e.region is None for e in same):
                msg += " (omit --region to use the entry whose region is not stated)"
            msg += "."
        msg += (
            f" Known instance types (pricings): {_known_prices(table)}. Known pricings: {', '.join(PRICINGS)}."
            " Or give the price yourself with --price-per-hour."
        )
        raise PriceTableError(msg)
    regions = ", ".join(sorted(e.region if e.region is not None else "not stated" for e in matches))
    raise PriceTableError(
        f"{len(matches)} {pricing} prices match instance type {name!r} (regions: {regions}); "
        "pass --region to choose one."
    )
