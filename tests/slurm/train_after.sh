#!/bin/bash
# The second stage: submitted with `-d afterok:ID` on the command line, as pipelines do.
#SBATCH --job-name=train
#SBATCH --gpus-per-node=1
#SBATCH --output=train-%j.out

test -f prepared.txt || { echo "no prepared data" >&2; exit 1; }
echo "training on: $(cat prepared.txt)"
