"""What leaves a run in its output forms: redaction, printable text, the charts' figures and the
OpenTelemetry span attributes."""
