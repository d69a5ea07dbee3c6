"""The curation pass over one agent folder: read it, plan, apply; renames, drafts' first versions,
webhouse."""
