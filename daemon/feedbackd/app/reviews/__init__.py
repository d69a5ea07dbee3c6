"""Reviews by several curators on the workspace: what HEAD holds of them, read for the figures of
`feedbackd agreement`."""
