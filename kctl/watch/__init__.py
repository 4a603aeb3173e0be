"""`kctl watch` (watch.py) and what only it uses: the screen (dashboard), the changes it
narrates between two snapshots (events) and the consumer groups it polls in the background
(groupwatch)."""
