"""Events out (SPEC section 17): what each webhook is owed, kept in `.feedbackd/`, and its
delivery beside the daemon's passes."""
