"""Admission check controllers shipped with Kueue (upstream's `pkg/controller/admissionchecks/`)."""
