"""Events out (SPEC section 17): the webhooks a commit owes, as pure values."""
