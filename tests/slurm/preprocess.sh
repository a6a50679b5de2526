#!/bin/bash
# The first stage of a pipeline; train_after.sh runs once it succeeded (-d afterok:ID).
#SBATCH --job-name=preprocess
#SBATCH --output=preprocess-%j.out

echo "tokenized 1000 documents" > prepared.txt
echo "prepared"
