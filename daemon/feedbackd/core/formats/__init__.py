"""The text formats feedbackd reads and writes: JSON, JSON Lines and YAML, each read strictly."""
