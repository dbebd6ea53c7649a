"""racksmith.gpu: load checks (stress, NVLink peer bandwidth, NCCL all-reduce, InfiniBand with
GPUDirect) and the training smoke test, run on the GPU hosts with PyTorch.

PyTorch is imported lazily, inside the functions that drive the GPUs, so the rules that turn
measurements into verdicts (``rules``), the MFU arithmetic (``mfu``), the SKU table (``sku``)
and the log parsers are plain Python, unit-tested without torch or a GPU. Results use the
host agent's outcome types (``racksmith.health.outcome``), so quick and load checks produce
reports of one schema and one verdict rule.
"""
