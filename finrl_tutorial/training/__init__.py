"""Training: the loop, checkpoints, and the scale-out paths (workers, learners)."""
from .checkpoint import agent_from_checkpoint, atomic_save, load_checkpoint
from .trainer import LOG_COLUMNS, TrainingError, TrainResult, evaluate, initial_agent, train
from .distributed import DataParallelContext, DistributedContext
from .equivalence import ddp_equivalence
from .experiment import results_table, run_experiment
from .workers import WorkerPool, shard_start_windows

__all__ = ["LOG_COLUMNS", "DataParallelContext", "DistributedContext", "TrainResult", "TrainingError", "WorkerPool",
           "agent_from_checkpoint", "atomic_save", "ddp_equivalence", "evaluate", "initial_agent", "load_checkpoint", "results_table",
           "run_experiment", "shard_start_windows", "train"]
