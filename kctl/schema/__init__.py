"""`kctl schema`: the schema registry's subjects, versions, compatibility and modes, and the
local cluster's registry daemon."""
