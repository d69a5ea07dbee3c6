"""`feedbackd eval` and `feedbackd bisect` (SPEC section 14): would the lessons have helped, and
which decision made them worse."""
