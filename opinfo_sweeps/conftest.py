# The optests plugin is dormant in pytest runs that do not ask for it; collecting this folder asks.
optests_sweep = True
