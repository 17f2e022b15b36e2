"""`kvviz plan`: the cheapest mix of tiers, links and GPUs (a grid of decision variables, the
scenario's `[plan]` section) that meets latency and throughput targets, found exactly with far
fewer timed runs than the grid (search.py says how), and the cost-latency front.

Not a mechanism: a library over the prefix cache's scenarios and runs."""
