"""The workspace as a command sees it: settings and who acts, the agent folders' files, problems,
`init`."""
