"""Which files and folders feedbackd reads as drafts and agents: plain files (or symbolic links
to them) and folders that stay inside the workspace. The daemon's scan, the commands and the HTTP
API all ask here, so none of them reads through a link that the others ignore (SPEC section 2:
symbolic links that lead outside the workspace are ignored and reported).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import NotFound
from feedbackd.core.ids import validate_id
from feedbackd.core.workspacepaths import AgentPaths, Workspace
from feedbackd.edges.files import is_inside, is_inside_data

OUTSIDE_LINK = "symbolic link leads outside the workspace"
OUTSIDE_DATA_LINK = "symbolic link leads outside _data/"


def refuse_outside_agent(runtime: Runtime, agent_id: str) -> AgentPaths:
    """The agent's paths; NotFound when its folder is a symbolic link that leads outside the
    workspace (the daemon ignores such a folder, so nothing is read through it)."""
    agent = runtime.workspace.agent(validate_id(agent_id, "agent id"))
    if os.path.lexists(agent.root) and not is_inside(runtime.workspace, agent.root):
        raise NotFound(
            f"{runtime.workspace.relative(agent.root)}: {OUTSIDE_LINK}; ignored",
            hint="move the agent's folder itself into the workspace, in place of the link",
        )
    return agent


def item_file_problem(workspace: Workspace, path: Path) -> str | None:
    """Why a file named like an item is not read as one, or None when it is: it must be a plain
    file, or a symbolic link to one, inside the workspace. The daemon's scan and every reader
    of a single draft (the queue listing, approve, reject) ask this one question, so none of
    them reads a file the others ignore."""
    problem = not_an_item(path)
    return outside_data(workspace, path) if problem is None else problem


def outside_data(workspace: Workspace, path: Path) -> str | None:
    """Why path, an item or a folder of items, is ignored for leading out of `_data/` (SPEC
    section 2: nothing is read or written outside it), or None when it stays inside."""
    if is_inside_data(workspace, path):
        return None
    return OUTSIDE_LINK if not is_inside(workspace, path) else OUTSIDE_DATA_LINK


def refuse_linked_folder(workspace: Workspace, folder: Path) -> None:
    """NotFound when an item folder (queue/, approved/, rejected/) is a symbolic link out of
    `_data/`: the daemon ignores it, so no command moves a draft into it or reads one from it."""
    if not os.path.lexists(folder):
        return
    problem = outside_data(workspace, folder)
    if problem is not None:
        raise NotFound(
            f"{workspace.relative(folder)}: {problem}; ignored",
            hint=f"make {folder.name}/ a folder of its own in place of the link",
        )


def listed_item_problem(workspace: Workspace, entry: os.DirEntry[str]) -> str | None:
    """item_file_problem for an entry of a folder that lies inside the workspace: a plain file
    costs no stat of its own (thousands of drafts in a big site's queue/)."""
    if entry.is_symlink():
        return item_file_problem(workspace, Path(entry.path))
    return _not_a_plain_file(entry)


def _not_a_plain_file(entry: os.DirEntry[str]) -> str | None:
    """As not_an_item, for a listed entry that is no symbolic link (no stat of its own when
    the file system tells the type in the listing)."""
    try:
        if entry.is_dir(follow_symlinks=False):
            return "a folder, not an item file"
        if entry.is_file(follow_symlinks=False):
            return None
    except FileNotFoundError:
        return None  # removed since the folder was listed: its reading says so
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    return "not a plain file (a pipe, socket or device)"


def not_an_item(path: Path) -> str | None:
    """Why an entry named like an item cannot be one (None: a plain file, or gone meanwhile).

    A curator who made a folder `qi-1.json` in approved/ hears why nothing happens, and a pipe
    is never opened (reading it would wait for a writer forever).
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "symbolic link to nothing" if path.is_symlink() else None
    except OSError as error:  # a loop of symbolic links, a folder that cannot be searched
        return f"cannot be read ({error.strerror})"
    if stat.S_ISDIR(mode):
        return "a folder, not an item file"
    if not stat.S_ISREG(mode):
        return "not a plain file (a pipe, socket or device)"
    return None
