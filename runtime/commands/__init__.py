"""Implementations of the `pal` subcommands, one module per topic."""
