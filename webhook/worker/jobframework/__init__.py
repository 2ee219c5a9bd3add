"""The job framework: what upstream's `pkg/controller/jobframework` is to its integrations."""
