"""Reviews by several curators as pure values (SPEC section 15): `reviews.jsonl`, what a review
leads to, and how far curators agree."""
