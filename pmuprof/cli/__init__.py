"""The click CLI: one thin module per command, discovered by ``main``."""
