"""What `eval` and `bisect` need from outside: the agent command run as a process, the answers
kept in `.feedbackd/`, and the history's revisions and notes read and written through git
(never the work tree, the index, HEAD or a branch)."""
