"""Fleet: what runs on cluster nodes (node composition, SLURM hooks, DCGM/Prometheus readers)."""
