"""Training: the loop, checkpoints, and the scale-out paths (workers, learners)."""
from .checkpoint import agent_from_checkpoint, atomic_save, load_checkpoint
from .trainer import LOG_COLUMNS, TrainingError, TrainResult, evaluate, initial_agent, train

__all__ = ["LOG_COLUMNS", "TrainResult", "TrainingError", "agent_from_checkpoint", "atomic_save", "evaluate",
           "initial_agent", "load_checkpoint", "train"]
