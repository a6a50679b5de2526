#!/bin/bash
# Checkpoint on the warning signal before the time limit, then requeue-friendly exit.
#SBATCH --job-name=ckpt
#SBATCH --time=0:20
#SBATCH --signal=B:USR1@15
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=ckpt-%j.out

checkpoint() {
  echo "USR1: checkpointing at step ${STEP}"
  exit 0
}
trap checkpoint USR1
STEP=0
while true; do
  STEP=$((STEP + 1))
  sleep 1 &
  wait $!
done
