"""The daemon and the writing actions: reconcile (plan, then apply), remote sync, ratings and
self-optimisation passes, locking, and the workspace's own files.
"""
