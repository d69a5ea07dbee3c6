"""What the command line and the HTTP API call: the writing actions, the read-only queries,
doctor."""
