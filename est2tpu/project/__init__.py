"""Facts about the project est2tpu reads, and the builder of its index (`build.Indexer`):
what a name or attribute holds at a point, and the Estimators and their uses."""
