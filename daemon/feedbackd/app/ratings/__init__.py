"""Ratings of rented skills as commits, and the self-optimisation of a provider's skills."""
