"""What is trained: models, data pipelines and optimizers. A workload never times itself."""
