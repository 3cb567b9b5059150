"""Touch a job's files from a root-run hook only as the job's user.

slurmd runs the epilog as root, and the job's StdOut is a path the job's user
chose: a plain ``open(path, "a")`` follows their link to a file root owns and
creates files in folders only root can write. So the card is written by a
forked child that has dropped to the job's uid and gid, opening the file
without following a link and without creating it, and checking (fstat) that
it is a regular file of that user before writing. Run as the job's user
already (tests, a personal epilog), the same opening and check are done in
this process.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class JobUser:
    """Whose a job's files are.

    Attributes:
        uid: The job's user id.
        gid: The job's primary group id.
    """

    uid: int
    gid: int


def append_as(user: JobUser, path: str, text: str) -> str:
    """Append `text` to the existing regular file `path` as `user`; never creates or follows a link.

    Returns:
        "" when written, else why not (one line).
    """
    if os.geteuid() == user.uid:
        return _append(path, text.encode("utf-8"), user.uid)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to the job's user for good, then open as that user
        os.close(read_end)
        try:
            os.setgroups([])
            os.setgid(user.gid)
            os.setuid(user.uid)
            why = _append(path, text.encode("utf-8"), user.uid)
        except BaseException as error:  # noqa: BLE001 - whatever it is goes back as the answer
            why = f"cannot act as uid {user.uid}: {error}"
        os.write(write_end, why.encode("utf-8", "replace")[:4000])
        os._exit(0)
    os.close(write_end)
    try:
        answer = b""
        while chunk := os.read(read_end, 4096):
            answer += chunk
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    return answer.decode("utf-8", "replace")


def _append(path: str, data: bytes, uid: int) -> str:
    try:
        fd = os.open(path, _FLAGS)
    except OSError as error:
        return f"{error.strerror or error} (opened as uid {uid}, without following links or creating it)"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_uid != uid:
            return f"it belongs to uid {info.st_uid}, not to the job's user (uid {uid})"
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return ""
    except OSError as error:
        return f"{error.strerror or error}"
    finally:
        os.close(fd)


def job_user(environ: Mapping[str, str], fields: Mapping[str, str]) -> JobUser | None:
    """The job's user from the epilog's SLURM_JOB_UID/GID, else `scontrol show job`'s UserId/GroupId.

    Returns:
        None when neither says (a hook must then touch none of the job's files).
    """
    uid = environ.get("SLURM_JOB_UID") or _id_in(fields.get("UserId", ""))
    gid = environ.get("SLURM_JOB_GID") or _id_in(fields.get("GroupId", ""))
    if not (uid and uid.isdigit() and gid and gid.isdigit()):
        return None
    return JobUser(int(uid), int(gid))


def _id_in(field: str) -> str:
    """The number of scontrol's ``name(1000)`` form ("" if absent)."""
    _, _, rest = field.partition("(")
    return rest.rstrip(")")
