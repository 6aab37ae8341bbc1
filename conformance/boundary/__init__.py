"""What crosses the adapter boundary: the scenario, the adapter's info and result, the messages (001)."""
