"""What every kctl command shares on the command line: its options, where output goes, errors
and exit codes, and the formats several commands read or print (the offset grammar, the JSON
record, the tables). Nothing here talks to a cluster."""
