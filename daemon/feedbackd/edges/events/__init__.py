"""The outside systems events go to and come from: a receiver's HTTP endpoint, git's log."""
