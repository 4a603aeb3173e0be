"""One module per lesson; kctl.learn.catalogue puts them in order."""
