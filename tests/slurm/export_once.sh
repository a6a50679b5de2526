#!/bin/bash
# A job that must never run twice (it publishes results): preempted or on a lost node, it
# fails instead of being requeued. Low priority across both nodes, so that any job preempts it.
#SBATCH --job-name=export
#SBATCH --nodes=2
#SBATCH --gres=gpu:2
#SBATCH --qos=low
#SBATCH --no-requeue
#SBATCH --output=export-%j.out

echo "exporting from ${SLURM_JOB_NODELIST}, restart ${SLURM_RESTART_COUNT:-0}"
trap 'echo "stopped before publishing"; exit 143' TERM
sleep 120 &
wait $!
echo "published"
