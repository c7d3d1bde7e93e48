"""torch.distributed.elastic.multiprocessing: ``errors.record``, which reports a worker's exception to its launcher."""
