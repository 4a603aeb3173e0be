"""`kctl acl` (acl.py) and what only it uses: bindings and filters from the options (aclbindings) and
the authorizer's answer to one request (aclexplain). The ACL requests are kctl.kafka.acls."""
