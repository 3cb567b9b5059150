"""The site catalog: built-in figures with sources, user TOML files, and bad input as one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattlog.accounting.carbon.sites import (
    SITE_FIELDS,
    Site,
    builtin_sites,
    get_site,
    load_sites,
    site_catalog,
)
from wattlog.accounting.ranges import Range
from wattlog.errors import ConfigError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sites.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = """
[sites.mylab]
description = "our cluster"
pue = 1.3
wue_onsite_l_per_kwh = 0.2
wue_offsite_l_per_kwh = [1.2, 3.4]
carbon_intensity_kg_per_kwh = 0.25

[sites.mylab.sources]
pue = "facility report 2025"
"""


def test_builtin_catalog_has_the_papers_sites() -> None:
    catalog = builtin_sites()
    jupiter, augusta = catalog["jupiter"], catalog["augusta"]
    assert (jupiter.pue, jupiter.carbon_intensity_kg_per_kwh) == (1.2, 0.332)
    assert (jupiter.wue_onsite_l_per_kwh, jupiter.wue_offsite_l_per_kwh) == (0.0, 1.29)
    assert (augusta.pue, augusta.carbon_intensity_kg_per_kwh, augusta.wue_offsite_l_per_kwh) == (
        1.12,
        0.352,
        3.10,
    )
    assert {"world", "us", "eu"} <= set(catalog)


def test_every_builtin_figure_has_a_source() -> None:
    for site in builtin_sites().values():
        for name in SITE_FIELDS:
            assert site.source(name) not in ("", "unsourced"), (site.name, name)
        assert site.description


def test_grid_averages_name_source_and_year() -> None:
    world = builtin_sites()["world"]
    assert "Ember" in world.source("carbon_intensity_kg_per_kwh")
    assert "2022" in world.source("carbon_intensity_kg_per_kwh")
    assert isinstance(world.wue_offsite_l_per_kwh, Range)


def test_user_file_adds_sites_with_ranges_and_default_sources(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD)
    site = load_sites(path)["mylab"]
    assert site.wue_offsite_l_per_kwh == Range(1.2, 3.4)
    assert site.source("pue") == "facility report 2025"
    assert str(path) in site.source("carbon_intensity_kg_per_kwh")
    catalog = site_catalog(path)
    assert {"mylab", "jupiter"} <= set(catalog)


def test_user_site_overrides_builtin_by_name(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("mylab", "Jupiter"))
    assert site_catalog(path)["jupiter"].pue == 1.3


def test_get_site_is_case_insensitive_and_unknown_lists_known_names() -> None:
    assert get_site("Augusta").name == "augusta"
    with pytest.raises(ConfigError) as info:
        get_site("mars")
    message = str(info.value)
    assert "unknown site 'mars'" in message and "augusta" in message and "jupiter" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("line", "old", "expected"),
    [
        ("pue = 0.9", "pue = 1.3", r"sites.toml: site 'mylab': PUE is 0.9, below 1"),
        (
            "carbon_intensity_kg_per_kwh = -0.1",
            "carbon_intensity_kg_per_kwh = 0.25",
            "carbon intensity cannot be negative",
        ),
        ("wue_onsite_l_per_kwh = -1", "wue_onsite_l_per_kwh = 0.2", "water use cannot be negative"),
        (
            "wue_offsite_l_per_kwh = [3.4, 1.2]",
            "wue_offsite_l_per_kwh = [1.2, 3.4]",
            "min 3.4 is above max 1.2",
        ),
        ('pue = "high"', "pue = 1.3", "expected a number or a range"),
        ("colour = 1\npue = 1.3", "pue = 1.3", "unknown key"),
    ],
)
def test_bad_site_values_are_one_line_errors_naming_file_and_site(
    tmp_path: Path, line: str, old: str, expected: str
) -> None:
    path = _write(tmp_path, GOOD.replace(old, line))
    with pytest.raises(ConfigError, match=expected) as info:
        load_sites(path)
    assert "\n" not in str(info.value)
    assert str(path) in str(info.value)


def test_missing_field_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing carbon_intensity_kg_per_kwh"):
        load_sites(_write(tmp_path, GOOD.replace("carbon_intensity_kg_per_kwh = 0.25", "")))
    with pytest.raises(ConfigError, match="cannot read sites file"):
        load_sites(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_sites(_write(tmp_path, "[sites.x\n"))
    with pytest.raises(ConfigError, match="no \\[sites.NAME\\] tables"):
        load_sites(_write(tmp_path, "title = 'x'\n"))


def test_site_validates_when_built_in_code() -> None:
    with pytest.raises(ConfigError, match="PUE"):
        Site(
            "x",
            pue=Range(0.5, 1.2),
            wue_onsite_l_per_kwh=0,
            wue_offsite_l_per_kwh=0,
            carbon_intensity_kg_per_kwh=0,
        )
    site = Site(
        "x", pue=1.1, wue_onsite_l_per_kwh=0, wue_offsite_l_per_kwh=1, carbon_intensity_kg_per_kwh=0.3
    )
    assert site.source("pue") == "unsourced"
    assert site.intensity.constant_kg_per_kwh == 0.3


HOURLY = (
    GOOD
    + """
[sites.mylab.intensity]
source = "eia930"
series = "EIA930_BALANCE.csv"
zone = "ERCO"
"""
)


def test_a_site_names_its_intensity_source_series_and_zone(tmp_path: Path) -> None:
    site = load_sites(_write(tmp_path, HOURLY))["mylab"]
    ref = site.intensity_source
    assert (ref.source, ref.series, ref.zone) == ("eia930", str(tmp_path / "EIA930_BALANCE.csv"), "ERCO")
    assert load_sites(_write(tmp_path, GOOD))["mylab"].intensity_source.source == "constant"
    assert all(s.intensity_source.source == "constant" for s in builtin_sites().values())
    with pytest.raises(ConfigError, match="cannot read intensity series"):
        site.open_intensity()  # the file is not there: an error, never the constant instead


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('source = "eia930"', 'source = "nogrid"', "unknown intensity source 'nogrid': use constant"),
        ('series = "EIA930_BALANCE.csv"', "", "intensity source 'eia930' needs a series"),
        ('zone = "ERCO"', "zone = 3", r"\[sites.mylab.intensity\] takes strings"),
    ],
)
def test_bad_intensity_sources_are_one_line_errors(tmp_path: Path, old: str, new: str, expected: str) -> None:
    path = _write(tmp_path, HOURLY.replace(old, new))
    with pytest.raises(ConfigError, match=expected) as info:
        load_sites(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
