"""An agent folder renamed with `mv`: found, and committed as one pure rename.

A moved folder looks like a new agent that git does not know, while its old folder is gone from
disk but still in HEAD. Taken as new, its drafts would be committed again as they are now (a
curator's edits taken for the agent's original), its ledger would look uncommitted (every
decision committed again) and the old folder's deletion would never be committed. So a pass over
an agent folder that HEAD lacks first looks for the vanished folder it came from: one whose
committed files are mostly in it under the same names (an item counts in any of queue/,
approved/, rejected/). The move is one `rename` commit of the files as HEAD holds them, so git
follows each draft back to the version the agent wrote, and the drafts' snapshots move along.
"""

from __future__ import annotations

import logging
import os
from pathlib import PurePosixPath

from feedbackd.app.commits.recording import Event
from feedbackd.app.curation.draftmemory import move_drafts
from feedbackd.app.workspace.runtime import Runtime, choose_author
from feedbackd.core.commitmsg import (
    AGENT_KEY,
    EVENT_KEY,
    build_message,
    rename_summary,
    rename_trailers,
)
from feedbackd.core.ids import is_valid_id
from feedbackd.core.workspacepaths import ALL_ITEM_FOLDERS, ITEM_SUFFIXES, AgentPaths
from feedbackd.edges.git.repo import GitRepo

log = logging.getLogger("feedbackd")


def follow_rename(runtime: Runtime, repo: GitRepo | None, agent: AgentPaths) -> Event | None:
    """Commit the agent folder's rename when it is a vanished agent's folder moved; the event,
    or None when it is not (or git is off)."""
    if repo is None:
        return None
    workspace = runtime.workspace
    committed = repo.listings.folders_at_head(workspace.relative(workspace.agents_dir))
    if not committed or agent.agent_id in committed:
        return None
    old_id = _renamed_from(runtime, repo, agent, committed)
    if old_id is None:
        return None
    old = workspace.agent(old_id)
    move_drafts(runtime, old, agent)
    summary = rename_summary(old_id)
    message = build_message("rename", agent.agent_id, summary, trailers=rename_trailers(old_id))
    author = choose_author(None, runtime, repo.user_identity())
    moved = (workspace.relative(old.root), workspace.relative(agent.root))
    sha = repo.commit_folder_move(*moved, message, author)
    if sha is None:
        return None
    log.info("rename(%s): %s", agent.agent_id, summary)
    return Event("rename", agent.agent_id, summary, commit=sha)


def former_names(repo: GitRepo, agent_id: str) -> list[str]:
    """The names the agent's folder had before, newest first, from its `rename` commits."""
    names: list[str] = []
    wanted = [agent_id]
    while wanted:
        name = wanted.pop()
        for entry in repo.trailer_log({EVENT_KEY: "rename", AGENT_KEY: name}):
            old = entry.renamed_from
            if old and old != agent_id and old not in names:
                names.append(old)
                wanted.append(old)
    return names


def _renamed_from(
    runtime: Runtime, repo: GitRepo, agent: AgentPaths, committed: list[str]
) -> str | None:
    """The committed agent folder, gone from disk, most of whose files the agent's folder
    holds; None when there is none."""
    agents_dir = runtime.workspace.agents_dir
    gone = [name for name in committed if is_valid_id(name) and not (agents_dir / name).is_dir()]
    if not gone:
        return None
    items = _item_ids(agent)
    best, best_share = None, 0.5
    for name in gone:
        files = repo.listings.files_at_head(runtime.workspace.relative(agents_dir / name))
        found = sum(_holds(agent, items, PurePosixPath(file)) for file in files)
        if files and found / len(files) > best_share:
            best, best_share = name, found / len(files)
    return best


def _item_ids(agent: AgentPaths) -> set[str]:
    """The ids of the item files in the agent's queue/, approved/, rejected/, review/ and
    disputed/."""
    ids: set[str] = set()
    for folder in ALL_ITEM_FOLDERS:
        try:
            names = os.listdir(agent.folder(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        ids.update(os.path.splitext(name)[0] for name in names)
    return ids


def _holds(agent: AgentPaths, items: set[str], file: PurePosixPath) -> bool:
    """True when the agent folder holds `file` (a path inside an agent folder): the same path,
    or for an item the same id in any of its folders, decided or not since."""
    if len(file.parts) == 2 and file.parts[0] in ALL_ITEM_FOLDERS and file.suffix in ITEM_SUFFIXES:
        return file.stem in items
    return (agent.root / file).exists()
