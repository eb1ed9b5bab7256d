"""What a request carries: the model's inputs, real data, shapes, and Triton's binary tensor encoding."""
