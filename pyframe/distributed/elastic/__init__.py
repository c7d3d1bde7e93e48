"""torch.distributed.elastic, the part scripts started by a launcher import: ``multiprocessing.errors.record``."""
