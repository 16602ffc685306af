"""Facts about the project est2tpu reads: what a name or attribute holds at a point."""
