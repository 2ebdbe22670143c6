"""Tests for suite.cost: the packaged price table, lookups and the samples-per-dollar metric."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from suite.cost import (
    DEFAULT_PRICE_TABLE_PATH,
    USER_PRICE_SOURCE,
    Cost,
    PriceEntry,
    PriceTable,
    PriceTableError,
    compute_cost,
    load_price_table,
    lookup,
    samples_per_dollar,
)

RAND_CPU = "Training AI Models on CPU"
SAGEMAKER_HETERO = "Amazon SageMaker heterogeneous clusters"

# (service, instance_type, pricing, usd_per_hour, region, date, words the source must contain)
EXPECTED = [
    ("ec2", "c7i.2xlarge", "on-demand", 0.357, None, "2024-09", RAND_CPU),
    ("ec2", "c7i.2xlarge", "spot", 0.1291, None, "2024-09", RAND_CPU),
    ("ec2", "g5.2xlarge", "on-demand", 1.212, None, "2024-09", RAND_CPU),
    ("sagemaker", "ml.p4d.24xlarge", "on-demand", 37.688, "us-east-1", "2022-10", SAGEMAKER_HETERO),
    ("sagemaker", "ml.c5.18xlarge", "on-demand", 3.672, "us-east-1", "2022-10", SAGEMAKER_HETERO),
    ("sagemaker", "ml.p3.2xlarge", "on-demand", 3.825, "us-east-1", "2022-10", SAGEMAKER_HETERO),
    ("sagemaker", "ml.c5.9xlarge", "on-demand", 1.836, "us-east-1", "2022-10", SAGEMAKER_HETERO),
]


def _entry(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "provider": "aws",
        "service": "ec2",
        "instance_type": "c7i.2xlarge",
        "region": None,
        "pricing": "on-demand",
        "usd_per_hour": 0.357,
        "date": "2024-09",
        "source": "test",
    }
    base.update(overrides)
    return base


def _write(tmp_path: Path, data: object, name: str = "prices.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _table(*entries: dict[str, object]) -> PriceTable:
    return PriceTable.model_validate({"table_version": 1, "currency": "USD", "entries": list(entries)})


# --- the packaged table -------------------------------------------------------------------------


def test_packaged_table_is_next_to_module() -> None:
    assert DEFAULT_PRICE_TABLE_PATH.is_file()
    assert DEFAULT_PRICE_TABLE_PATH.parent.name == "data"


def test_packaged_table_holds_the_seven_seeded_entries() -> None:
    table = load_price_table()
    assert table.table_version == 1
    assert table.currency == "USD"
    assert len(table.entries) == 7
    got: dict[tuple[str, str, str], PriceEntry] = {(e.service, e.instance_type, e.pricing): e for e in table.entries}
    for service, instance_type, pricing, price, region, date, source in EXPECTED:
        entry = got[(service, instance_type, pricing)]
        assert entry.provider == "aws"
        assert entry.usd_per_hour == price
        assert entry.region == region
        assert entry.date == date
        assert source in entry.source
        if region is None:
            assert entry.note is not None and "not stated" in entry.note


def test_derived_sagemaker_prices_are_noted_and_add_up_to_the_article_totals() -> None:
    table = load_price_table()
    p4d = lookup(table, "ml.p4d.24xlarge")
    c5_18 = lookup(table, "ml.c5.18xlarge")
    p3 = lookup(table, "ml.p3.2xlarge")
    c5_9 = lookup(table, "ml.c5.9xlarge")
    # Article totals: $45.032/h for 1x p4d.24xlarge + 2x c5.18xlarge; $5.661/h for 1x p3.2xlarge + 1x c5.9xlarge.
    assert p4d.usd_per_hour + 2 * c5_18.usd_per_hour == pytest.approx(45.032, abs=1e-9)
    assert p3.usd_per_hour + c5_9.usd_per_hour == pytest.approx(5.661, abs=1e-9)
    for derived, total in ((c5_18, "45.032"), (c5_9, "5.661")):
        assert derived.note is not None
        assert "derived" in derived.note.lower()
        assert total in derived.note
    for quoted in (p4d, p3):
        assert quoted.note is None or "derived" not in quoted.note.lower()


def test_load_price_table_from_given_path(tmp_path: Path) -> None:
    path = _write(tmp_path, {"table_version": 1, "currency": "USD", "entries": [_entry()]})
    assert load_price_table(path).entries[0].usd_per_hour == 0.357


# --- lookup -------------------------------------------------------------------------------------


def test_lookup_on_demand_vs_spot() -> None:
    table = load_price_table()
    on_demand = lookup(table, "c7i.2xlarge")
    spot = lookup(table, "c7i.2xlarge", pricing="spot")
    assert on_demand.pricing == "on-demand" and on_demand.usd_per_hour == 0.357
    assert spot.pricing == "spot" and spot.usd_per_hour == 0.1291


def test_lookup_with_region() -> None:
    table = load_price_table()
    assert lookup(table, "ml.p3.2xlarge", region="us-east-1").usd_per_hour == 3.825


def test_lookup_unknown_instance_lists_known_ones() -> None:
    with pytest.raises(PriceTableError) as info:
        lookup(load_price_table(), "c7i.4xlarge")
    msg = str(info.value)
    assert "c7i.4xlarge" in msg
    for _, instance_type, *_ in EXPECTED:
        assert instance_type in msg
    assert "on-demand" in msg and "spot" in msg
    assert "--price-per-hour" in msg


def test_lookup_unknown_pricing_lists_pricings() -> None:
    with pytest.raises(PriceTableError, match=r"no spot price.*g5\.2xlarge.*Known pricings: on-demand, spot"):
        lookup(load_price_table(), "g5.2xlarge", pricing="spot")


def test_lookup_region_mismatch_says_which_regions_exist() -> None:
    with pytest.raises(PriceTableError, match=r"us-west-2.*Regions known for it: us-east-1"):
        lookup(load_price_table(), "ml.p3.2xlarge", region="us-west-2")
    with pytest.raises(PriceTableError, match=r"omit --region"):
        lookup(load_price_table(), "c7i.2xlarge", region="us-east-1")


def test_lookup_ambiguous_asks_for_region() -> None:
    table = _table(
        _entry(region="us-east-1", usd_per_hour=0.357),
        _entry(region="eu-west-1", usd_per_hour=0.4),
    )
    with pytest.raises(PriceTableError, match=r"--region") as info:
        lookup(table, "c7i.2xlarge")
    assert "us-east-1" in str(info.value) and "eu-west-1" in str(info.value)
    assert lookup(table, "c7i.2xlarge", region="eu-west-1").usd_per_hour == 0.4


# --- samples_per_dollar -------------------------------------------------------------------------


def test_samples_per_dollar_hand_computed() -> None:
    # fp32 baseline of "Training AI Models on CPU": 9.12 samples/s on c7i.2xlarge at $0.357/h.
    assert samples_per_dollar(9.12, 0.357) == pytest.approx(9.12 * 3600 / 0.357)
    assert samples_per_dollar(9.12, 0.357) == pytest.approx(91966.386, rel=1e-7)
    assert samples_per_dollar(0.0, 1.0) == 0.0
    assert samples_per_dollar(1.0, 3600.0) == pytest.approx(1.0)


def test_samples_per_dollar_reproduces_article_spot_figure() -> None:
    # The article quotes 1135.76 for its best CPU result (40.73 samples/s) at the $0.1291/h spot price;
    # it matches throughput * 3600 / price when read in thousands of samples per dollar.
    spot = lookup(load_price_table(), "c7i.2xlarge", pricing="spot")
    assert samples_per_dollar(40.73, spot.usd_per_hour) / 1000 == pytest.approx(1135.76, abs=0.02)


@pytest.mark.parametrize("price", [0.0, -1.0, math.nan, math.inf])
def test_samples_per_dollar_rejects_bad_price(price: float) -> None:
    with pytest.raises(ValueError, match="price"):
        samples_per_dollar(10.0, price)


@pytest.mark.parametrize("throughput", [-0.1, math.nan, math.inf])
def test_samples_per_dollar_rejects_bad_throughput(throughput: float) -> None:
    with pytest.raises(ValueError, match="throughput"):
        samples_per_dollar(throughput, 1.0)


# --- malformed tables ---------------------------------------------------------------------------


def _entry_without(field: str) -> dict[str, object]:
    entry = _entry()
    del entry[field]
    return entry


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": [_entry_without("usd_per_hour")]},
            r"entries\[0\] \(c7i\.2xlarge\)\.usd_per_hour: required field is missing",
            id="missing-field",
        ),
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": [_entry(usd_per_hour=-0.5)]},
            r"entries\[0\] \(c7i\.2xlarge\)\.usd_per_hour: .*greater than 0.*-0\.5",
            id="negative-price",
        ),
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": [_entry(usd_per_hour=0)]},
            r"usd_per_hour: .*greater than 0",
            id="zero-price",
        ),
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": [_entry(usd_per_hour="0.357")]},
            r"usd_per_hour: .*number",
            id="price-as-string",
        ),
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": [_entry(pricing="reserved")]},
            r"entries\[0\] \(c7i\.2xlarge\)\.pricing: .*'on-demand' or 'spot'.*'reserved'",
            id="unknown-pricing",
        ),
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": [_entry(date="2024-9")]},
            r"date: .*pattern",
            id="bad-date",
        ),
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": [_entry(price=1.0)]},
            r"entries\[0\] \(c7i\.2xlarge\)\.price: unknown field",
            id="unknown-field",
        ),
        pytest.param(
            {"table_version": 1, "currency": "EUR", "entries": [_entry()]},
            r"currency: .*'USD'",
            id="wrong-currency",
        ),
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": []},
            r"entries: .*at least 1",
            id="no-entries",
        ),
        pytest.param(
            {"table_version": 1, "currency": "USD", "entries": [_entry(), _entry()]},
            r"duplicate entry for aws ec2 c7i\.2xlarge \(on-demand, region not stated\)",
            id="duplicate",
        ),
        pytest.param(
            {"table_version": 2, "currency": "USD", "entries": [_entry()]},
            r"unsupported table_version 2; this version of trainbench reads table_version 1",
            id="wrong-table-version",
        ),
        pytest.param(
            {"table_version": "1", "currency": "USD", "entries": [_entry()]},
            r"table_version must be an integer",
            id="table-version-string",
        ),
        pytest.param(
            {"currency": "USD", "entries": [_entry()]},
            r"table_version is missing",
            id="no-table-version",
        ),
        pytest.param([_entry()], r"must be a YAML mapping.*got list", id="not-a-mapping-list"),
        pytest.param(None, r"must be a YAML mapping.*got NoneType", id="empty-file"),
    ],
)
def test_malformed_table_raises_price_table_error(tmp_path: Path, data: object, expected: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(PriceTableError, match=expected) as info:
        load_price_table(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_invalid_yaml_syntax(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("table_version: 1\nentries: [\n", encoding="utf-8")
    with pytest.raises(PriceTableError, match=r"broken\.yaml is not valid YAML"):
        load_price_table(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(PriceTableError, match=r"cannot read price table .*nope\.yaml"):
        load_price_table(path)


def test_models_check_version_when_built_directly() -> None:
    with pytest.raises(ValueError, match="unsupported table_version 3"):
        PriceTable.model_validate({"table_version": 3, "currency": "USD", "entries": [_entry()]})
    with pytest.raises(ValueError):
        PriceEntry.model_validate(_entry(usd_per_hour=math.inf))


# --- compute_cost -------------------------------------------------------------------------------


def test_compute_cost_none_without_price_or_instance() -> None:
    assert compute_cost(100.0) is None


def test_compute_cost_user_price() -> None:
    cost = compute_cost(9.12, price_per_hour=0.357)
    assert cost is not None
    assert cost.usd_per_hour == 0.357
    assert cost.samples_per_dollar == pytest.approx(9.12 * 3600 / 0.357)
    assert cost.price_source == USER_PRICE_SOURCE == "user (--price-per-hour)"
    assert cost.instance_type is None and cost.pricing is None and cost.region is None
    assert cost.price_date is None


def test_compute_cost_from_packaged_table() -> None:
    cost = compute_cost(40.73, instance_type="c7i.2xlarge", pricing="spot")
    assert cost is not None
    assert cost.usd_per_hour == 0.1291
    assert cost.samples_per_dollar == pytest.approx(40.73 * 3600 / 0.1291)
    assert cost.instance_type == "c7i.2xlarge"
    assert cost.pricing == "spot"
    assert cost.region is None
    assert RAND_CPU in cost.price_source
    assert cost.price_date == "2024-09"


def test_compute_cost_uses_given_table() -> None:
    table = _table(_entry(instance_type="x1.test", usd_per_hour=2.0, region="us-east-1"))
    cost = compute_cost(1.0, instance_type="x1.test", region="us-east-1", table=table)
    assert cost is not None
    assert cost.samples_per_dollar == pytest.approx(1800.0)
    assert cost.region == "us-east-1"


def test_compute_cost_rejects_both_price_and_instance() -> None:
    with pytest.raises(PriceTableError, match=r"pass only one.*--price-per-hour.*--instance-type"):
        compute_cost(10.0, price_per_hour=1.0, instance_type="c7i.2xlarge")


def test_compute_cost_unknown_instance() -> None:
    with pytest.raises(PriceTableError, match="Known instance types"):
        compute_cost(10.0, instance_type="nope.large")


def test_compute_cost_bad_user_price() -> None:
    with pytest.raises(ValueError, match="price"):
        compute_cost(10.0, price_per_hour=0.0)


def test_cost_to_dict_and_frozen() -> None:
    cost = compute_cost(9.12, instance_type="ml.p3.2xlarge")
    assert isinstance(cost, Cost)
    d = cost.to_dict()
    assert d == {
        "usd_per_hour": 3.825,
        "samples_per_dollar": pytest.approx(9.12 * 3600 / 3.825),
        "instance_type": "ml.p3.2xlarge",
        "pricing": "on-demand",
        "region": "us-east-1",
        "price_source": cost.price_source,
        "price_date": "2022-10",
    }
    with pytest.raises(AttributeError):
        cost.usd_per_hour = 1.0  # type: ignore[misc]


def test_oversized_price_table_is_refused(tmp_path: Path) -> None:
    from suite.files import MAX_FILE_BYTES

    path = tmp_path / "prices.yaml"
    with path.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(PriceTableError, match=r"over the .*-byte limit"):
        load_price_table(path)


@pytest.mark.parametrize("price", [-1.0, 0.0, float("nan"), float("inf")])
def test_a_bad_price_on_the_command_line_is_bad_input(price: float) -> None:
    """``--price-per-hour -1`` was a traceback from the preflight; it is a clear error with exit 2."""
    with pytest.raises(PriceTableError, match="positive number of USD per hour") as info:
        compute_cost(1.0, price_per_hour=price)
    assert info.value.exit_code == 2
