"""Server facts over SQL (read-only) and the parsers of what the server prints."""
