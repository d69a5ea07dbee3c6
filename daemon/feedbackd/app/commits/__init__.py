"""Commit plumbing shared by every writer: one change one commit, the ledgers as committed, the
write lock."""
