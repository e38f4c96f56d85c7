"""A job worker's run folder, known by its identity, so a worker notices when it is deleted.

    home = Home(folder)     # at the worker's start
    home.check()            # before every status write and step: FolderGone when it is gone

A worker whose folder is deleted under it (rm -rf outside the app) or replaced by another run of
the same name must end, writing nothing: every write (jobs write files atomically, making the
folder first) would make the folder again, out of the app's sight, and the worker would train
on, unstoppable and outside the job cap (issue 39). The identity is the folder's (device, inode),
read by one stat (about 2 us), so a folder made anew under the same name is not taken for it.

Not here: the training worker (job_worker.py), the SAE worker (sae_worker.py), which both use it;
counting workers and ending orphans (jobs.workers, jobs.orphans).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from serving import jobs


class FolderGone(Exception):
    """The run's folder was deleted or replaced under the worker: it ends, writing nothing."""


class Home:
    """The run folder the worker started in, known by its identity (device, inode)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.identity = self._identity()

    def _identity(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.folder)
        except OSError:
            return None
        return (found.st_dev, found.st_ino)

    def check(self) -> None:
        """FolderGone when the folder is not the one the worker started in."""
        if self.identity is None or self._identity() != self.identity:
            raise FolderGone(f"{self.folder} was deleted or replaced; this worker ends here")

    def tidy(self, root: Path) -> None:
        """Remove a folder this worker made again after its own was deleted (a save of the
        bundle between two checks writes into a new one): a folder of another identity without
        settings.json, which a run's folder has from its start on; under the runs `root`'s lock,
        so no start is half-way through making one of that name."""
        if self._identity() in (None, self.identity):
            return
        with contextlib.suppress(OSError, jobs.JobError), jobs.locked(root):
            if self._identity() != self.identity and not (self.folder / "settings.json").exists():
                shutil.rmtree(self.folder, ignore_errors=True)
