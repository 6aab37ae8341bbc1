"""The requirement catalog (catalog.toml) and the coverage of requirements by checks."""
