"""Training: the loop, checkpoints, the run resolved once at its top (`Run`, `open_run`), and the
scale-out paths (workers, learners).

``TrainingError`` (`finrl_tutorial.errors`), ``atomic_save`` (`finrl_tutorial.atomic`) and
``shard_start_windows`` (`finrl_tutorial.envs`) are re-exported here, where a training script looks."""
from ..atomic import atomic_save
from ..envs import shard_start_windows
from ..errors import TrainingError
from .checkpoint import agent_from_checkpoint, load_checkpoint
from .trainer import LOG_COLUMNS, TrainResult, evaluate, initial_agent, train
from .distributed import DataParallelContext, DistributedContext
from .equivalence import ddp_equivalence
from .experiment import results_table, run_experiment
from .run import EVAL_EVERY, Run, data_fingerprint, local_context, open_run
from .workers import WorkerPool

__all__ = ["EVAL_EVERY", "LOG_COLUMNS", "DataParallelContext", "DistributedContext", "Run", "TrainResult",
           "TrainingError", "WorkerPool", "agent_from_checkpoint", "atomic_save", "data_fingerprint",
           "ddp_equivalence", "evaluate", "initial_agent", "load_checkpoint", "local_context", "open_run",
           "results_table", "run_experiment", "shard_start_windows", "train"]
