"""Curation as pure values: drafts and their diff, decisions, feedback.json, the plan of an agent
pass, prompts."""
