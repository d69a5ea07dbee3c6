"""The git CLI, the only way feedbackd reaches a repository: runs, reads, commits, locks, remote
sync."""
