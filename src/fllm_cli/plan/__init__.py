"""Plans: the derivation tree, the execution order, exporters."""
