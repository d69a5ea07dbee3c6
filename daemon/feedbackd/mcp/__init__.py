"""A face: the Model Context Protocol server (SPEC section 16), over standard input and output
(`feedbackd mcp`) and over Streamable HTTP (`/mcp` on `feedbackd serve`, handed to the web face
by launch.py)."""
