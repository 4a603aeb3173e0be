"""`kctl sql` (sql.py): the command line. The query runs in kctl.spark (sqlrun, views), which
the command imports only when it runs."""
