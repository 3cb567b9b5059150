"""Fault: `wattlog audit verify` trusted the file it was given.

On 38e5f82 it hung on a FIFO or /dev/zero, accepted bundles holding links and device
entries, wrote 2.14 GB to its temporary folder for a 2 MB bomb, printed a line per
junk entry, and refused a non-tar file in 5 lines. Now each is refused unread, in one
line naming the reason.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from wattlog.accounting.publishing.audit.bundle import verify_bundle
from wattlog.accounting.publishing.audit.files import extract_bundle
from wattlog.accounting.publishing.untrusted_tar import TarLimits
from wattlog.cli import main
from wattlog.errors import ConfigError, UntrustedInput


class Zeros(io.RawIOBase):
    """`size` zero bytes, read without holding them."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def a_tar(path: Path, *members: tarfile.TarInfo, mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tar:  # type: ignore[call-overload]
        for member in members:
            body = io.BytesIO(b"x" * member.size) if member.isreg() else None
            tar.addfile(member, body)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size, link
    return info


def one_line_refusal(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    assert main(args) == 2
    out, err = capsys.readouterr()
    lines = (out + err).strip().splitlines()
    assert len(lines) == 1, out + err
    return lines[0]


@pytest.mark.timeout(20)
def test_a_fifo_or_a_device_as_the_bundle_is_refused_without_hanging(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "bundle.tar.xz"
    os.mkfifo(fifo)
    with pytest.raises(UntrustedInput, match="a FIFO"):
        verify_bundle(fifo)
    with pytest.raises(UntrustedInput, match="a character device"):
        verify_bundle(Path("/dev/zero"))
    assert "not a regular file" in one_line_refusal(capsys, ["audit", "verify", str(fifo)])


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        (tarfile.SYMTYPE, "a symbolic link"),
        (tarfile.LNKTYPE, "a hard link"),
        (tarfile.CHRTYPE, "a character device"),
        (tarfile.BLKTYPE, "a block device"),
        (tarfile.FIFOTYPE, "a FIFO"),
    ],
)
def test_a_member_not_a_regular_file_refuses_the_bundle(tmp_path: Path, kind: bytes, said: str) -> None:
    bundle = a_tar(
        tmp_path / "b.tar.gz", member("manifest.json", size=2), member("rows/x", kind, link="/etc/shadow")
    )
    with pytest.raises(UntrustedInput, match=f"'rows/x' is {said}; only regular files are read"):
        extract_bundle(bundle, tmp_path / "out")
    assert not (tmp_path / "out" / "rows" / "x").exists()


def test_a_bomb_is_refused_before_its_bytes_are_written(tmp_path: Path) -> None:
    bundle = tmp_path / "bomb.tar.gz"
    size = 300 << 20  # 300 MiB of zeros: about 300 kB compressed
    with tarfile.open(bundle, "w:gz", compresslevel=1) as tar:
        tar.addfile(member("series.bin", size=size), io.BufferedReader(Zeros(size), 1 << 20))
    assert bundle.stat().st_size < 2 << 20
    with pytest.raises(UntrustedInput, match="decompresses past"):
        extract_bundle(bundle, tmp_path / "out")
    written = sum(f.stat().st_size for f in (tmp_path / "out").rglob("*") if f.is_file())
    assert written == 0


def test_a_flood_of_members_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = a_tar(tmp_path / "flood.tar", *(member(f"junk{i}") for i in range(1500)), mode="w")
    line = one_line_refusal(capsys, ["audit", "verify", str(bundle)])
    assert "more than 1000 members" in line


def test_a_file_not_a_tar_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.tar.xz"
    junk.write_bytes(os.urandom(3000))
    assert "not a tar" in one_line_refusal(capsys, ["audit", "verify", str(junk)])


def test_a_member_named_outside_is_refused(tmp_path: Path) -> None:
    bundle = a_tar(tmp_path / "b.tar.gz", member("../evil", size=1))
    with pytest.raises(ConfigError, match="points outside it"):  # already so on 38e5f82: a guard
        extract_bundle(bundle, tmp_path / "out")


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE])
def test_verify_refuses_a_link_or_device_member_in_one_line_writing_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, kind: bytes
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # where verify would unpack
    (tmp_path / "tmp").mkdir()
    bundle = a_tar(tmp_path / "b.tar.gz", member("rows/x", kind, link="/etc/passwd"), member("manifest.json"))
    assert "only regular files are read" in one_line_refusal(capsys, ["audit", "verify", str(bundle)])
    assert not list((tmp_path / "tmp").iterdir())


def test_a_member_over_the_cap_is_refused_before_it_is_written(tmp_path: Path) -> None:
    bundle = a_tar(
        tmp_path / "b.tar", member("table.json", size=10), member("series.bin", size=4097), mode="w"
    )
    limits = TarLimits(max_bytes=4096, ratio_floor_bytes=4096)
    with pytest.raises(UntrustedInput, match="decompresses past"):
        extract_bundle(bundle, tmp_path / "out", limits)
    assert not (tmp_path / "out" / "series.bin").exists()


@pytest.mark.parametrize("count", [1000, 1001])
def test_the_member_cap_is_1000(tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int) -> None:
    bundle = a_tar(tmp_path / "many.tar", *(member(f"junk{i}") for i in range(count)), mode="w")
    assert main(["audit", "verify", str(bundle)]) != 0
    out, err = capsys.readouterr()
    assert ("more than 1000 members" in out + err) == (count > 1000), out + err
    assert len((out + err).strip().splitlines()) <= 3  # 1,002 lines for 1,000 junk members on 18aee5b


def test_a_member_under_a_name_another_member_holds_is_a_finding_never_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ "a", then "a/b": the member was written at its own name, and "a/b" needed a folder where the
    file "a" stood (FileExistsError, a traceback, before 2026-12-07)."""
    bundle = a_tar(tmp_path / "b.tar.gz", member("a", size=2), member("a/b", size=2))
    assert main(["audit", "verify", str(bundle)]) != 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "a/b" in out + err


def test_a_member_named_twice_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = a_tar(tmp_path / "b.tar.gz", member("table.json", size=2), member("table.json", size=2))
    assert "twice" in one_line_refusal(capsys, ["audit", "verify", str(bundle)])
