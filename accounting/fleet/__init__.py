"""Nodes of a job: composition, SLURM hooks and their agents' lifetime, DCGM and Prometheus readers."""
