"""Domain specs: YAML with source locations → typed, validated Domain."""
