#!/bin/bash
# A job that runs elsewhere than it was submitted from and names what it needs from the
# submitting shell.
#SBATCH --chdir=workdir
#SBATCH --export=ALL,EXPERIMENT=baseline,SEED
#SBATCH --output=run.out

echo "in $(basename "$(pwd)"), experiment ${EXPERIMENT}, seed ${SEED:-unset}"
