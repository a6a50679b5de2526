#!/bin/bash
# A directive Baton does not know: refused at submit, naming the line.
#SBATCH --job-name=bad
#SBATCH --burst-buffer=stage_in

echo never
