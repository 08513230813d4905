"""The bundled decision backend: any chat model becomes a decision model (see backend/README.md)."""
