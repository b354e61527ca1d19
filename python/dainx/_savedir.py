"""A model directory saved as one transaction (DAIN.save).

The files are written into a new directory beside the target, which then
replaces it. Its temporaries are named as every dainx command names them
(internal/outtx): ``.NAME.dainx-tmp-PID-HOST-RANDOM`` for the new
directory and ``.NAME.dainx-old-PID-HOST-RANDOM`` for the replaced one,
PID the owning process and HOST eight hex digits of its host's name. A
save killed (SIGKILL) midway leaves them; the next save of the same
directory (or a dainx command writing it) removes them once their owner is
gone, and never while it runs. Errors are OSErrors naming the path the
caller gave, never a temporary."""

import os
import random
import re
import shutil
import socket
import zlib

_HOST = "%08x" % (zlib.crc32(socket.gethostname().encode()) & 0xFFFFFFFF)


def temp_name(parent, base, kind="tmp"):
    """A new name in parent for a temporary of kind "tmp" or "old" of the
    output parent/base, owned by this process."""
    return os.path.join(parent, ".%s.dainx-%s-%d-%s-%016x" % (base, kind, os.getpid(), _HOST, random.getrandbits(64)))


def _alive(pid):
    """Whether process pid may still run (kill(pid, 0) is not ESRCH)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True


def sweep(parent, base):
    """Remove from parent the temporaries of parent/base whose owner, a
    process of this host, is gone; a replaced directory set aside by a save
    killed before the new one was renamed in is put back."""
    pat = re.compile(r"^\.%s\.dainx-(tmp|old)-([0-9]+)-([0-9a-f]{8})-[0-9a-f]{16}$" % re.escape(base))
    try:
        names = os.listdir(parent)
    except OSError:
        return
    target = os.path.join(parent, base)
    for n in names:
        m = pat.match(n)
        if not m or m.group(3) != _HOST or _alive(int(m.group(2))):
            continue
        p = os.path.join(parent, n)
        try:
            if m.group(1) == "old" and not os.path.lexists(target):
                os.rename(p, target)
                continue
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.remove(p)
        except OSError:
            pass  # a later save removes it


def named(e, user_path):
    """e, an OSError about a temporary, as the OSError of the same errno
    (and subclass) naming user_path."""
    if e.errno is None:
        return OSError("%s: %s" % (os.fspath(user_path), e))
    return OSError(e.errno, e.strerror or str(e), os.fspath(user_path))


def save_dir(path, files, user_path):
    """Write files (name -> bytes) as the directory path (absolute): all of
    them or none. An older directory at path is replaced whole, and kept
    intact on any failure. Errors are OSErrors naming user_path."""
    parent, base = os.path.split(path)
    try:
        os.makedirs(parent, exist_ok=True)
        sweep(parent, base)
        new = temp_name(parent, base)
        os.mkdir(new, 0o700)
    except OSError as e:
        raise named(e, user_path) from None
    aside = None
    try:
        for name, b in files.items():
            with open(os.path.join(new, name), "wb") as f:
                f.write(b)
                f.flush()
                os.fsync(f.fileno())
        os.chmod(new, 0o755)
        if os.path.isdir(path):
            aside = temp_name(parent, base, "old")
            os.rename(path, aside)
        os.rename(new, path)
    except BaseException as e:
        shutil.rmtree(new, ignore_errors=True)
        if aside is not None:
            if os.path.isdir(aside) and not os.path.lexists(path):
                os.rename(aside, path)
            else:
                shutil.rmtree(aside, ignore_errors=True)
        if isinstance(e, OSError):
            raise named(e, user_path) from None
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
