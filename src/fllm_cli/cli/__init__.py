"""Command-line interface: thin commands over the core, one error funnel."""
