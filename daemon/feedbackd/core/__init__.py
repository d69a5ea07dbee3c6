"""Pure values: items and their diff, feedback entries, prompts, ratings, reputation, SOUL.md
text, pricing and quality rules, commit text, configuration models, ids and paths.

Nothing here touches git, processes, SQLite, the watcher or the clock: time comes in as an
argument, so every rule is a function from values to values.
"""
