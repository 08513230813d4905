"""What the gateway learns about answers: whether the probabilities are right (docs/architecture.md)."""
