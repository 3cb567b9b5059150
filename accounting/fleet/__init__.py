"""The fleet: node composition, SLURM hooks, the DCGM reader, the recording composition root."""
