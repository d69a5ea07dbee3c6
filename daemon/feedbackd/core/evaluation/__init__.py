"""Evaluation (SPEC section 14): scoring an agent command's answers against the approved
versions, the paired bootstrap, what the command reads and how its answer is parsed, and the
search of `bisect`. Pure: the application runs the commands and reads the history."""
