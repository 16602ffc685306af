"""One module per rule; the registry finds them."""
